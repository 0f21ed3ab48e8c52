"""The import paths and names users write are part of the contract."""

from __future__ import annotations

import subprocess
import sys

import aizk_integrations


def test_the_public_names_are_pinned() -> None:
    assert aizk_integrations.__all__ == [
        "DEFAULT_BUDGET",
        "DEFAULT_CHARS_PER_TOKEN",
        "DEFAULT_MAX_BUDGET",
        "BudgetCovers",
        "Candidate",
        "CharsPerToken",
        "Decision",
        "Evidence",
        "EvidenceError",
        "Lane",
        "PackStep",
        "Provenance",
        "RecallResult",
        "Scope",
        "ScopeDirectory",
        "TokenCounter",
        "cut_table",
        "explain",
        "pack",
        "pack_block",
        "walk",
    ]
    for name in aizk_integrations.__all__:
        assert getattr(aizk_integrations, name) is not None


def test_the_defaults_are_the_seeds() -> None:
    assert aizk_integrations.DEFAULT_BUDGET == 2048
    assert aizk_integrations.DEFAULT_MAX_BUDGET == 16384
    assert aizk_integrations.DEFAULT_CHARS_PER_TOKEN == 4.0


def test_importing_the_core_loads_no_framework() -> None:
    probe = (
        "import sys, aizk_integrations;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'langchain_core', 'langchain_classic', 'llama_index'}))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert completed.stdout.strip() == "[]"
