"""Print the declared minimum of every requirement of the named extras, pinned exactly.

`python3 .ci/lowest_pins.py test` prints one `name==X` a line: the project's dependencies and
those of each extra named (and of the extras they name in turn), each `name>=X` turned into
`name==X` (a ceiling beside the floor, `name>=X,<Y`, changes nothing). `.ci/lowest` installs
them, so the lowest-versions job tests exactly the floors pyproject.toml declares and cannot
drift from them. A requirement
with any other specifier has no single lowest version to test, so it is refused.
"""

import re
import sys
import tomllib
from pathlib import Path

PROJECT = "aizk-integrations"
FLOOR = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*(\[[^\]]*\])?)\s*>=\s*(?P<version>[^\s,;]+)"
    r"(\s*,\s*<\s*[^\s,;]+)?$"  # a ceiling, as mcp's <2, leaves the floor the lowest version
)
SELF = re.compile(rf"^{PROJECT}\[(?P<extras>[^\]]*)\]$")


def pins(project: dict[str, object], extras: list[str]) -> list[str]:
    """The pinned floors, in the order pyproject.toml declares them, each once."""
    optional = project["optional-dependencies"]
    assert isinstance(optional, dict)
    pinned: list[str] = []
    seen: set[str] = set()

    def add(requirements: list[str]) -> None:
        for requirement in requirements:
            requirement = requirement.split("#")[0].strip()
            if own := SELF.match(requirement):
                for extra in own["extras"].split(","):
                    include(extra.strip())
                continue
            floor = FLOOR.match(requirement)
            if floor is None:
                sys.exit(
                    f"lowest_pins: {requirement!r} has no single lowest version; declare it as "
                    "name>=X (the lowest version that works)"
                )
            pin = f"{floor['name']}=={floor['version']}"
            if pin not in pinned:
                pinned.append(pin)

    def include(extra: str) -> None:
        if extra in seen:
            return
        if extra not in optional:
            sys.exit(f"lowest_pins: {PROJECT} has no extra {extra!r}; it has {sorted(optional)}")
        seen.add(extra)
        add(optional[extra])

    dependencies = project["dependencies"]
    assert isinstance(dependencies, list)
    add(dependencies)
    for extra in extras:
        include(extra)
    return pinned


if __name__ == "__main__":
    pyproject = tomllib.loads(Path("pyproject.toml").read_text(encoding="utf-8"))
    print("\n".join(pins(pyproject["project"], sys.argv[1:])))
