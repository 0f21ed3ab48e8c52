"""The one rule every text the library carries obeys: it can be encoded."""

from __future__ import annotations

import re

_SURROGATE = re.compile(r"[\ud800-\udfff]")


def check_encodable(text: str) -> str:
    """Refuse text with a lone surrogate: no encoding can carry it, so whoever sends the prompt
    to a model would fail on it later, far from the item that held it."""
    found = None if text.isascii() else _SURROGATE.search(text)  # ASCII holds no surrogate
    if found:
        raise ValueError(
            f"text has a lone surrogate (U+{ord(found.group()):04X}) at character "
            f"{found.start()}, which no encoding can carry; clean the text first, e.g. "
            "text.encode('utf-8', 'replace').decode('utf-8')"
        )
    return text
