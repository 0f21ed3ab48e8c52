"""Every snippet runs in a fresh environment holding exactly what its page says to install.

A README section names its install line (`pip install "aizk-integrations[langchain]" numpy`), and
its snippet runs in a new virtual environment where only that line was installed, from this
checkout. A docs page says which line its snippets need beyond `[all]` ("This page's snippets
run as they stand after `pip install ...`"), and its snippets run where the README's first
install (`pip install -e ".[all]"`) and that line were installed. Each snippet runs as a user
runs it, a script of its own, from the repository root; where the page shows what it prints, it
prints exactly that. The Postgres page's snippets get a fresh database of the tests'
throwaway server, as in process (tests/docs/conftest.py puts its URLs in the environment).

Building environments is slow (the frameworks, seconds each with uv's cache, a minute or more
without it), so each distinct install is built once per session, and the tests run in CI's
slow job.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.docs.pages import DOCS, README, ROOT, Block, blocks, section_blocks, shown_outputs

PAGE_LINE = re.compile(r"This page's snippets run as they stand after\s+`(pip install [^`]+)`\.")
"""The sentence a docs page says its install line in."""
ALL = '"aizk-integrations[all]"'
README_SECTIONS = ("LangChain", "LlamaIndex", "Without a framework")
"""The README sections that show a snippet, each with its own install line."""
UV = Path(sys.executable).with_name("uv")

Environment = Callable[[tuple[str, ...]], Path]
"""The python of a fresh environment holding exactly these requirements, built once a session."""


def readme_first_install() -> list[str]:
    """The README's first install, `-e ".[all]"`, as arguments for this checkout."""
    quickstart = blocks(README)[0].code
    [install] = re.findall(r"pip install (-e \S+)", quickstart)
    return [argument.replace(".", str(ROOT), 1) for argument in shlex.split(install)]


def requirements(line: str) -> list[str]:
    """The requirements of `pip install ...`, this package's taken from this checkout."""
    words = shlex.split(line)
    assert words[:2] == ["pip", "install"], line
    return [re.sub(r"^aizk-integrations", str(ROOT), word) for word in words[2:]]


def section_line(heading: str) -> str:
    """The install line a README section shows, the first `pip install` in its text."""
    text = README.read_text(encoding="utf-8").split(f"\n## {heading}\n", 1)[1].split("\n## ")[0]
    found = re.search(r"`(pip install [^`]+)`", text)
    assert found is not None, f"the README's {heading} section shows no install line"
    return found[1]


def page_line(page: Path) -> str | None:
    """The install line a docs page says its snippets need, if it says one."""
    said = PAGE_LINE.findall(page.read_text(encoding="utf-8"))
    assert len(said) <= 1, f"{page.name} says its install line {len(said)} times"
    return " ".join(said[0].split()) if said else None


def python_pages() -> list[Path]:
    return [page for page in sorted(DOCS.glob("*.md")) if _python(page)]


def _python(page: Path) -> list[Block]:
    return [block for block in blocks(page) if block.language == "python"]


def cases() -> Iterator[pytest.ParameterSet]:
    for heading in README_SECTIONS:
        for snippet in section_blocks(README, heading, "python"):
            yield pytest.param(snippet, tuple(requirements(section_line(heading))), id=snippet.name)
    for page in python_pages():
        line = page_line(page)
        if line is None:  # test_every_page_with_snippets_says_its_install_line says so
            continue
        assert line.startswith(f"pip install {ALL}"), f"{page.name}: {line}"
        extras = requirements(line)[1:]
        for snippet in _python(page):
            installed = (*readme_first_install(), *extras)
            yield pytest.param(snippet, installed, id=snippet.name)


def test_every_page_with_snippets_says_its_install_line_once() -> None:
    unsaid = [page.name for page in python_pages() if page_line(page) is None]
    assert unsaid == []


def test_each_readme_section_with_a_snippet_shows_the_line_it_runs_with() -> None:
    assert section_line("LangChain") == 'pip install "aizk-integrations[langchain]" numpy'
    assert section_line("LlamaIndex") == 'pip install "aizk-integrations[llama-index]"'
    assert section_line("Without a framework") == "pip install aizk-integrations"


@pytest.fixture(scope="session")
def environment(tmp_path_factory: pytest.TempPathFactory) -> Environment:
    """A builder of fresh environments, one per distinct install, kept for the session."""
    built: dict[tuple[str, ...], Path] = {}

    def build(installed: tuple[str, ...]) -> Path:
        if installed not in built:
            where = tmp_path_factory.mktemp("venv")
            env = _clean_environment() | {"VIRTUAL_ENV": str(where)}
            subprocess.run([UV, "venv", "-q", "--python", sys.executable, where], check=True)
            subprocess.run([UV, "pip", "install", "-q", *installed], check=True, env=env)
            built[installed] = where / "bin" / "python"
        return built[installed]

    return build


def _clean_environment() -> dict[str, str]:
    """This process's environment without what would point a script at this checkout or venv."""
    drop = {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"}
    return {name: value for name, value in os.environ.items() if name not in drop}


@pytest.mark.slow
@pytest.mark.parametrize(("snippet", "installed"), list(cases()))
def test_every_snippet_runs_with_exactly_the_install_line_its_page_shows(
    snippet: Block,
    installed: tuple[str, ...],
    environment: Environment,
    tmp_path: Path,
) -> None:
    python = environment(installed)
    script = tmp_path / "snippet.py"
    script.write_text(snippet.code, encoding="utf-8")
    completed = subprocess.run(
        [python, script],
        cwd=ROOT,
        env=_clean_environment(),  # with the Postgres page's URLs (tests/docs/conftest.py)
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert completed.returncode == 0, f"{snippet.name} with {installed}:\n{completed.stderr}"
    assert completed.stdout.strip()
    shown = dict(shown_outputs())
    if snippet in shown:
        assert completed.stdout == shown[snippet].code


@pytest.mark.slow
def test_the_installed_version_is_pyprojects(environment: Environment) -> None:
    python = environment(tuple(requirements(section_line("Without a framework"))))
    probe = "import aizk_integrations; print(aizk_integrations.__version__)"
    completed = subprocess.run(
        [python, "-c", probe], cwd="/", capture_output=True, text=True, check=True
    )
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert completed.stdout.strip() == declared["project"]["version"]
