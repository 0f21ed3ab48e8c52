"""A user's script that follows the docs passes `mypy --strict`, with no plugins.

Each python snippet of README.md and docs/*.md is written to a file of its own, as a user would
paste it, and type-checked against this checkout's package and the installed frameworks. A
snippet that only type-checks with pydantic's mypy plugin, a cast or an ignore is a typing bug
in the package, not in the snippet.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.pages import ROOT, python_blocks


# A mypy run over every page's snippets: half a minute of one core, so it runs in CI's slow job
# (`python -m pytest -m slow`) beside the long searches.
@pytest.mark.slow
def test_every_python_snippet_in_the_docs_passes_mypy_strict_without_plugins(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    snippets = python_blocks()
    assert snippets
    files = []
    for snippet in snippets:
        path = tmp_path / (re.sub(r"\W", "_", snippet.name).lower() + ".py")
        path.write_text(snippet.code, encoding="utf-8")
        files.append(path.name)
    # A config of our own, so nothing of the repository's (plugins, overrides) applies; the
    # checkout comes first on the path, so it is this package that is checked.
    (tmp_path / "mypy.ini").write_text(f"[mypy]\nmypy_path = {ROOT}\n", encoding="utf-8")
    # pytest's cache keeps mypy's between runs, as the frameworks take a while to analyse; it
    # is absent under `-p no:cacheprovider`, and then a cold cache in tmp_path does.
    pytest_cache: pytest.Cache | None = getattr(request.config, "cache", None)
    cache = pytest_cache.mkdir("mypy-docs-snippets") if pytest_cache else tmp_path / ".mypy_cache"
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--config-file=mypy.ini",
            f"--cache-dir={cache}",
            "--no-error-summary",
            *files,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    # Report each problem at its line of the page, not of the file it was written to.
    where = dict(zip(files, snippets, strict=True))
    report = re.sub(
        r"^(\S+\.py):(\d+)",
        lambda match: (
            f"{where[match[1]].page.relative_to(ROOT)}:{where[match[1]].line + int(match[2])}"
        ),
        completed.stdout,
        flags=re.M,
    )
    problems = report + completed.stderr
    assert completed.returncode == 0, f"mypy --strict on the docs' snippets:\n{problems}"
    assert not problems


def test_mypy_refuses_what_validation_refuses_for_a_candidates_scopes(tmp_path: Path) -> None:
    # `Candidate`'s typed signature is what a type checker reads: it must accept the spellings
    # validation takes and flag the ones it refuses, here before the code ever runs.
    (tmp_path / "scopes.py").write_text(
        "from uuid import UUID\n"
        "from aizk_integrations import Candidate\n"
        'Candidate(line="x", scopes=["sam", UUID(int=1), 42])\n'
        'Candidate(line="x", scopes="sam")\n'
        'Candidate(line="x", scopes=4.2)\n',
        encoding="utf-8",
    )
    (tmp_path / "mypy.ini").write_text(f"[mypy]\nmypy_path = {ROOT}\n", encoding="utf-8")
    completed = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--config-file=mypy.ini", "scopes.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    errors = [line for line in completed.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1, completed.stdout
    assert errors[0].startswith("scopes.py:5:")
    assert '"scopes"' in errors[0]
