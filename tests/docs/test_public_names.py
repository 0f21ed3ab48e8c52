"""What users copy teaches only the public API: the docs' snippets, the examples and the notebook
import nothing private, so a reorganisation of the internals never breaks them."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from importlib import import_module

import nbformat
import pytest

from tests.docs.pages import PUBLIC_MODULES, ROOT, python_blocks

PACKAGE = "aizk_integrations"


def sources() -> Iterator[tuple[str, str]]:
    """`(where, code)` for every snippet, example script and notebook cell a user may copy."""
    for block in python_blocks():
        yield block.name, block.code
    for script in sorted((ROOT / "examples").glob("*.py")):
        yield str(script.relative_to(ROOT)), script.read_text(encoding="utf-8")
    path = ROOT / "examples" / "notebook.ipynb"
    # untyped: nbformat ships no type hints, and a wrapper would only restate its signature.
    notebook = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]
    for number, cell in enumerate(notebook.cells, start=1):
        if cell.cell_type == "code":
            yield f"examples/notebook.ipynb cell {number}", cell.source


def private_uses(code: str) -> Iterator[str]:
    """Each import of, or attribute reached through, a name outside the public surface."""
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PACKAGE):
            module = node.module or ""
            if module not in PUBLIC_MODULES:
                yield f"from {module} import ..."
                continue
            public = set(import_module(module).__all__)
            yield from (
                f"from {module} import {alias.name}"
                for alias in node.names
                if alias.name not in public
            )
        elif isinstance(node, ast.Import):
            yield from (
                f"import {alias.name}"
                for alias in node.names
                if alias.name.startswith(PACKAGE) and alias.name not in PUBLIC_MODULES
            )
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == PACKAGE
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            yield f"{PACKAGE}.{node.attr}"


@pytest.mark.parametrize(("where", "code"), list(sources()), ids=[w for w, _ in sources()])
def test_what_users_copy_imports_only_public_names(where: str, code: str) -> None:
    assert list(private_uses(code)) == []


def test_the_check_catches_a_private_import() -> None:
    code = (
        "from aizk_integrations._run.settings import PackingSettings\n"
        "import aizk_integrations._rows"
    )
    assert list(private_uses(code)) == [
        "from aizk_integrations._run.settings import ...",
        "import aizk_integrations._rows",
    ]
    assert list(private_uses("from aizk_integrations import walk")) == [
        "from aizk_integrations import walk"
    ]
