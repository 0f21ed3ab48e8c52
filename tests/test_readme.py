"""The README cannot drift from the code: its commands come first and its snippets run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
CODE_BLOCKS = re.findall(r"^```(\w*)\n(.*?)^```", README, re.MULTILINE | re.DOTALL)
PYTHON_BLOCKS = [code for language, code in CODE_BLOCKS if language == "python"]


def test_the_readme_opens_with_the_two_setup_commands_before_any_other_code() -> None:
    (first_language, first), (second_language, second) = CODE_BLOCKS[:2]
    assert (first_language, second_language) == ("bash", "bash")
    assert first.strip().endswith('pip install -e ".[all]" && python examples/quickstart.py')
    assert second.strip().endswith('pip install -e ".[test]" && python -m pytest')
    assert first.count("\n") == second.count("\n") == 1  # each alone in its block


def test_the_sections_come_in_the_order_a_newcomer_needs_them() -> None:
    headings = re.findall(r"^## (.+)$", README, re.MULTILINE)
    expected = [
        "LangChain",
        "LlamaIndex",
        "Metadata conventions",
        "Scopes and authorization",
        "What the budget counts, and why it is a prefix",
        "Plugging a real tokenizer",
        "Where to put the block in a prompt",
        "Bad input",
        "Performance",
    ]
    assert [h for h in headings if h in expected] == expected


def test_the_block_shown_in_the_readme_is_the_golden_block() -> None:
    from tests.test_result import GOLDEN

    (shown,) = [code for language, code in CODE_BLOCKS if language == "markdown"]
    assert shown.rstrip("\n") == GOLDEN


@pytest.mark.parametrize(
    "snippet", PYTHON_BLOCKS, ids=[f"snippet-{i}" for i, _ in enumerate(PYTHON_BLOCKS)]
)
def test_every_python_snippet_in_the_readme_runs(
    snippet: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    exec(compile(snippet, "README.md snippet", "exec"), {"__name__": "__main__"})
    assert capsys.readouterr().out  # every snippet shows its reader something


def test_the_readme_has_python_snippets_to_run() -> None:
    assert len(PYTHON_BLOCKS) >= 3
