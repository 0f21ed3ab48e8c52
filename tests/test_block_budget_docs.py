"""The README's budget-modes section: its snippet runs offline and prints what the prose says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SECTION_SOURCES = (ROOT / "README.md",)


def budget_sections() -> list[tuple[Path, str]]:
    """Each file's `## What the budget counts` section, up to the next second-level heading."""
    sections = []
    for path in SECTION_SOURCES:
        if not path.exists():
            continue
        text = path.read_text("utf-8")
        match = re.search(r"^## What the budget counts[^\n]*\n(.*?)(?=^## |\Z)", text, re.M | re.S)
        if match:
            sections.append((path, match.group(1)))
    return sections


def test_the_budget_section_exists_somewhere() -> None:
    assert budget_sections(), f"no '## What the budget counts' section in {SECTION_SOURCES}"


@pytest.mark.parametrize(
    ("path", "section"), budget_sections(), ids=[path.name for path, _ in budget_sections()]
)
def test_the_snippet_prints_exactly_the_counts_the_section_shows(
    path: Path, section: str, capsys: pytest.CaptureFixture[str]
) -> None:
    [snippet] = re.findall(r"^```python\n(.*?)^```", section, re.M | re.S)
    [shown] = re.findall(r"^```text\n(.*?)^```", section, re.M | re.S)
    exec(compile(snippet, f"{path.name} budget snippet", "exec"), {"__name__": "__main__"})
    assert capsys.readouterr().out == shown
