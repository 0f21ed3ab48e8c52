"""README sections by heading, for the tests that hold a section's snippet to what it promises."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def readme_section(heading: str) -> str:
    """The text under the `## {heading}` heading, up to the next second-level heading.

    `heading` may be the start of a longer heading ("What the budget counts"), so a section can
    be renamed at its end without breaking the tests that read it.
    """
    text = README.read_text(encoding="utf-8")
    match = re.search(rf"^## {re.escape(heading)}[^\n]*\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"README.md has no '## {heading}' section"
    return match.group(1)


def code_blocks(section: str, language: str) -> list[str]:
    """The bodies of the section's fenced blocks in `language`, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```", section, re.M | re.S)
