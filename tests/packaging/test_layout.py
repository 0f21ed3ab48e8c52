"""The package's folders show its parts, and imports between parts go one way."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).parents[2] / "aizk_integrations"

LAYERS = {
    "basics": 0,
    "_scopes": 1,
    "_markdown": 1,
    "_core": 2,
    "_stores": 2,
    "_run": 3,
    "counters": 3,
    "adapters": 4,
}
"""Each part may import the parts of a lower layer and itself, never a part above it or beside
it: so no two parts import each other, whatever path joins them."""

ADAPTERS = {"langchain", "langchain_agents", "llama_index", "mcp"}


def part_of(module: str) -> str:
    """The part a module of the package belongs to, from its dotted name."""
    parts = module.split(".")
    if len(parts) == 1 or parts[1] == "__init__":
        return "adapters"  # the package's face re-exports from every part
    name = parts[1]
    if name in ADAPTERS:
        return "adapters"
    if name in {"counters", "_counters"}:
        return "counters"
    if name in LAYERS:
        return name
    return "basics"


def imports_of(path: Path) -> set[str]:
    """Every module of the package this file imports, at any depth of the file."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "aizk_integrations":
                found.update(f"aizk_integrations.{alias.name}" for alias in node.names)
            elif node.module.startswith("aizk_integrations."):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("aizk_integrations."))
    return found


def module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    return ".".join(relative.parts)


def test_at_most_ten_private_modules_sit_at_the_package_root() -> None:
    private = [path.name for path in PACKAGE.glob("_*.py") if path.name != "__init__.py"]
    assert len(private) <= 10, sorted(private)


def test_each_part_imports_only_the_parts_below_it() -> None:
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        importer = part_of(module_name(path))
        for imported in imports_of(path):
            target = part_of(imported)
            if target != importer and LAYERS[target] >= LAYERS[importer]:
                wrong.append(f"{module_name(path)} ({importer}) imports {imported} ({target})")
    assert wrong == []


def test_the_layout_check_catches_an_import_up_the_layers() -> None:
    assert part_of("aizk_integrations._scopes.ids") == "_scopes"
    assert part_of("aizk_integrations._errors") == "basics"
    assert LAYERS[part_of("aizk_integrations._core.result")] >= LAYERS["_scopes"]
    assert not LAYERS[part_of("aizk_integrations._run.run")] < LAYERS["_core"]
