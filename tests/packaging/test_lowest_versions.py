"""The lowest versions pyproject.toml declares are the ones CI tests.

`.ci/lowest` installs each dependency's floor exactly, as `.ci/lowest_pins.py` reads it from
pyproject.toml, and runs the adapters' tests on them. These tests hold the pins to the
declarations (read here with `packaging`, as pip reads them), and `.ci/run` to running the job.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib

from packaging.requirements import Requirement

from tests.docs.pages import ROOT

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def lowest_pins(*extras: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, ".ci/lowest_pins.py", *extras],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )


def declared(extra: str) -> list[Requirement]:
    """The requirements installing the project with `extra` brings, its own extras unfolded."""
    requirements = []
    for text in PROJECT["optional-dependencies"][extra]:
        requirement = Requirement(text)
        if requirement.name == PROJECT["name"]:
            for inner in sorted(requirement.extras):
                requirements += declared(inner)
        else:
            requirements.append(requirement)
    return requirements


def test_every_dependency_the_tests_install_declares_one_lowest_version() -> None:
    for requirement in [*map(Requirement, PROJECT["dependencies"]), *declared("test")]:
        [floor] = [each for each in requirement.specifier if each.operator == ">="]
        ceilings = [each for each in requirement.specifier if each is not floor]
        assert all(each.operator == "<" for each in ceilings), requirement
        assert requirement.marker is None, requirement


def test_the_lowest_versions_job_pins_exactly_the_declared_floors() -> None:
    completed = lowest_pins("test")
    assert completed.returncode == 0, completed.stderr
    expected = []
    for requirement in [*map(Requirement, PROJECT["dependencies"]), *declared("test")]:
        [specifier] = [each for each in requirement.specifier if each.operator == ">="]
        extras = f"[{','.join(sorted(requirement.extras))}]" if requirement.extras else ""
        pin = f"{requirement.name}{extras}=={specifier.version}"
        if pin not in expected:
            expected.append(pin)
    assert completed.stdout.splitlines() == expected


def test_an_extra_pyproject_does_not_declare_is_refused_naming_the_ones_it_does() -> None:
    completed = lowest_pins("tests")
    assert completed.returncode == 1
    extras = sorted(PROJECT["optional-dependencies"])
    assert (
        completed.stderr
        == f"lowest_pins: aizk-integrations has no extra 'tests'; it has {extras}\n"
    )


def test_ci_runs_the_lowest_versions_job() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "bash .ci/lowest" in ci.splitlines()
    lowest = (ROOT / ".ci" / "lowest").read_text(encoding="utf-8")
    assert 'python3 .ci/lowest_pins.py test > "$workdir/pins.txt"' in lowest
    assert 'uv pip install --quiet --compile-bytecode -e ".[test]" -r "$workdir/pins.txt"' in lowest
    assert "python -m pytest tests/adapters\n" in lowest
