"""The one rule every text the library carries obeys: it can be encoded.

Evidence text, scope names, scope descriptions and citation keys with a lone surrogate are
refused (`check_encodable`). A citation value is the one exception, shown with each lone
surrogate replaced (`without_surrogates`): it is a label cut from the item's metadata, not the
item, and a lone surrogate is what Python makes of an ordinary file name that is not UTF-8
(`os.fsdecode` on a Latin-1 `café.txt` gives `"caf\\udce9.txt"`), so refusing it would refuse
the item for its file name's spelling.
"""

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


REPLACEMENT = "\ufffd"
"""What a lone surrogate in a label shows as: U+FFFD REPLACEMENT CHARACTER, the character a
decoder writes for bytes it cannot read (`bytes.decode(errors="replace")`)."""


def without_surrogates(text: str) -> str:
    """A label as it can be shown and encoded: each lone surrogate replaced by U+FFFD."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(REPLACEMENT, text)
