"""The server is served, and tested, on both majors of the MCP SDK: the floor of 1.x in the
lowest-versions job, 1.x with langchain-mcp-adapters in the main environment, and 2.x with
llama-index-tools-mcp 0.6 in a job of its own."""

from __future__ import annotations

import tomllib

from packaging.requirements import Requirement

from tests.docs.pages import ROOT


def _ci(name: str) -> list[str]:
    return (ROOT / ".ci" / name).read_text(encoding="utf-8").splitlines()


def test_the_mcp_extra_accepts_both_majors_from_a_tested_floor() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    [sdk] = [
        r for r in map(Requirement, project["optional-dependencies"]["mcp"]) if r.name == "mcp"
    ]
    assert sdk.specifier.contains("1.27.2")
    assert not sdk.specifier.contains("1.27.1")  # no AccessToken.claims: every request failed
    assert sdk.specifier.contains("2.3.0")
    assert not sdk.specifier.contains("3.0.0")
    assert "python -m pytest tests/mcp" in _ci("lowest")  # on the floor


def test_ci_runs_the_mcp_tests_on_the_sdks_2x_with_its_clients() -> None:
    assert "bash .ci/mcp2" in _ci("run")
    job = "\n".join(_ci("mcp2"))
    assert '"mcp>=2,<3" "llama-index-tools-mcp>=0.6"' in job
    assert "python -m pytest tests/mcp -rfEs" in job
