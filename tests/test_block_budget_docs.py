"""The README's budget-modes section: its snippet runs offline and prints what the prose says."""

from __future__ import annotations

import pytest

from tests.readme_sections import code_blocks, readme_section

HEADING = "What the budget counts"


def test_the_budget_section_exists_somewhere() -> None:
    assert readme_section(HEADING)


def test_the_snippet_prints_exactly_the_counts_the_section_shows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    section = readme_section(HEADING)
    [snippet] = code_blocks(section, "python")
    [shown] = code_blocks(section, "text")
    exec(compile(snippet, "README.md budget snippet", "exec"), {"__name__": "__main__"})
    assert capsys.readouterr().out == shown
