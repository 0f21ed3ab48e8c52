"""A wheel built from this tree, installed on its own, renders the golden block.

This proves the template ships inside the wheel rather than being found in the source tree.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from tests.golden import GOLDEN

ROOT = Path(__file__).resolve().parents[2]

RENDER_SEED = """
from uuid import UUID
import aizk_integrations
from aizk_integrations import Candidate, Lane, RecallResult, Scope, ScopeDirectory
assert "site-packages" in aizk_integrations.__file__, aizk_integrations.__file__
directory = ScopeDirectory.for_caller(
    "sam",
    {"org-book-club": Scope(name="book-club", description="Neighborhood book club, Kawasaki")},
)
candidates = [
    Candidate(
        lane=Lane.SOURCES,
        line="Q3 Retrieval Plan by Sam (author) observed 2026-07-02\\n"
        "  Week three targets the reranker ablation and the fused-lane sweep.",
        scopes=["sam", "org-book-club"],
        artifact_id=UUID("019820a1-0000-7000-8000-000000000001"),
        artifact_content_id=UUID("019820a4-0000-7000-8000-000000000002"),
    ),
    Candidate(lane=Lane.FACTS, scopes=["sam"],
        line="- [Sam, author, preference] (prefers) Sam prefers morning study blocks."),
    Candidate(lane=Lane.WORKING_MEMORY, scopes=["sam"],
        line="- [note] Sam: reranker sidecar is back up on port 8004."),
]
import sys
sys.stdout.write(RecallResult.from_candidates(candidates, directory).to_markdown())
"""


# A wheel built and installed in a fresh environment: a packaging check CI's slow job runs.
@pytest.mark.slow
def test_a_wheel_installed_in_a_fresh_environment_renders_the_golden_block(
    tmp_path: Path,
) -> None:
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(ROOT)],
        check=True,
    )
    (wheel,) = wheels.glob("aizk_integrations-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "aizk_integrations/templates/recall.md.j2" in names
    assert "aizk_integrations/py.typed" in names
    # Unicode's data the scope-name rules read (`data/README.md` lists it), so a wheel without
    # any of it fails here
    data = ROOT / "aizk_integrations" / "data"
    assert {f"aizk_integrations/data/{path.name}" for path in data.glob("*.txt")} <= set(names)

    environment = tmp_path / "venv"
    venv.create(environment, with_pip=True)
    python = environment / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)],
        check=True,
    )
    clean_env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    rendered = subprocess.run(
        [str(python), "-c", RENDER_SEED],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env=clean_env,
    ).stdout
    assert rendered == GOLDEN
