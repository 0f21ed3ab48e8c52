"""Rebuild the Unicode data the scope-name rule reads, in `aizk_integrations/data/`.

Every file comes from the Unicode Character Database, version 15.0.0 (the version of the
vendored `confusables.txt`), as Debian 12 packages it (`unicode-data` 15.0.0-1, installed at
`/usr/share/unicode`). Whole files are copied as they are; an excerpt keeps its source's
header and the section it takes, line for line; `small_capitals.txt` is derived from
`UnicodeData.txt` and says how. `aizk_integrations/data/README.md` lists each file with its
source and version; nothing is downloaded at run time.

Usage:

    apt-get install unicode-data                       # Debian 12: UCD 15.0.0
    python tools/build_unicode_data.py                 # from /usr/share/unicode
    python tools/build_unicode_data.py --ucd DIR       # from another UCD 15.0.0 directory
    python tools/build_unicode_data.py --check         # exit 1 if a vendored file differs
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

VERSION = "15.0.0"
ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "aizk_integrations" / "data"

Build = Callable[[Path], bytes]


def copy(name: str) -> Build:
    """The UCD file `name`, as it is."""
    return lambda ucd: (ucd / name).read_bytes()


def header(text: str) -> list[str]:
    """A UCD file's opening comment block: its name, date, copyright and documentation lines."""
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line)
    return lines


def excerpt(name: str, what: str, take: Callable[[list[str]], list[str]]) -> Build:
    """The header of UCD file `name`, a line saying what is taken and why, and the lines taken."""

    def build(ucd: Path) -> bytes:
        text = (ucd / name).read_text(encoding="utf-8")
        note = ["#", f"# An excerpt: {what}, as it is, and nothing else."]
        return ("\n".join([*header(text), *note, "", *take(text.splitlines())]) + "\n").encode()

    return build


def section(first: str) -> Callable[[list[str]], list[str]]:
    """The lines from the one that starts with `first` to the section's total line."""

    def take(lines: list[str]) -> list[str]:
        start = next(n for n, line in enumerate(lines) if line.startswith(first))
        end = next(n for n in range(start, len(lines)) if lines[n].startswith("# Total"))
        return lines[start : end + 1]

    return take


def script_aliases(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("sc ;")]


SMALL_CAPITAL = re.compile(
    r"LATIN (?:LETTER|CAPITAL LETTER) SMALL CAPITAL ([A-Z])"
    r"|NEGATIVE (?:SQUARED|CIRCLED) LATIN CAPITAL LETTER ([A-Z])"
)
"""Names of letters that read as a Latin capital but that neither NFKC nor `confusables.txt`
maps to one: the small capitals (which `confusables.txt` makes the prototypes of Greek,
Cyrillic and Cherokee look-alikes) and the negative squared and circled capitals."""


def small_capitals(ucd: Path) -> bytes:
    text = (ucd / "UnicodeData.txt").read_text(encoding="utf-8")
    lines = [
        "# small_capitals.txt",
        f"# Derived from UnicodeData.txt, Unicode {VERSION} (Debian's unicode-data 15.0.0-1),",
        "# by tools/build_unicode_data.py: every character named LATIN LETTER SMALL CAPITAL x,",
        "# LATIN CAPITAL LETTER SMALL CAPITAL x, NEGATIVE SQUARED LATIN CAPITAL LETTER x or",
        "# NEGATIVE CIRCLED LATIN CAPITAL LETTER x, where x is one letter, and the capital x it",
        "# reads as.",
        "#",
        "# Format: code point ; the Latin capital letter it reads as # its name",
        "",
    ]
    for line in text.splitlines():
        point, name = line.split(";")[:2]
        found = SMALL_CAPITAL.fullmatch(name)
        if found:
            letter = found.group(1) or found.group(2)
            lines.append(f"{point} ; {ord(letter):04X} # {name}")
    return ("\n".join(lines) + "\n").encode()


FILES: dict[str, tuple[str, Build]] = {
    "scripts.txt": ("Scripts.txt", copy("Scripts.txt")),
    "script_extensions.txt": ("ScriptExtensions.txt", copy("ScriptExtensions.txt")),
    "script_aliases.txt": (
        "PropertyValueAliases.txt, its `sc` lines",
        excerpt(
            "PropertyValueAliases.txt",
            "the Script property's value aliases (`sc ; short ; long`)",
            script_aliases,
        ),
    ),
    "joining_type.txt": (
        "extracted/DerivedJoiningType.txt",
        copy("extracted/DerivedJoiningType.txt"),
    ),
    "virama.txt": (
        "extracted/DerivedCombiningClass.txt, its Virama section",
        excerpt(
            "extracted/DerivedCombiningClass.txt",
            "the Canonical_Combining_Class=Virama section of the file above",
            section("# Canonical_Combining_Class=Virama"),
        ),
    ),
    "soft_dotted.txt": (
        "PropList.txt, its Soft_Dotted section",
        excerpt(
            "PropList.txt",
            "the Soft_Dotted section of the file above",
            section("0069..006A    ; Soft_Dotted"),
        ),
    ),
    "emoji_sequences.txt": ("emoji/emoji-sequences.txt", copy("emoji/emoji-sequences.txt")),
    "emoji_zwj_sequences.txt": (
        "emoji/emoji-zwj-sequences.txt",
        copy("emoji/emoji-zwj-sequences.txt"),
    ),
    "standardized_variants.txt": ("StandardizedVariants.txt", copy("StandardizedVariants.txt")),
    "emoji_variation_sequences.txt": (
        "emoji/emoji-variation-sequences.txt",
        copy("emoji/emoji-variation-sequences.txt"),
    ),
    "small_capitals.txt": ("derived from UnicodeData.txt", small_capitals),
}
"""Each vendored file: what it is made from, and how."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ucd", type=Path, default=Path("/usr/share/unicode"))
    parser.add_argument("--check", action="store_true", help="exit 1 if a vendored file differs")
    arguments = parser.parse_args()
    readme = (arguments.ucd / "ReadMe.txt").read_text(encoding="utf-8")
    if f"Version {VERSION}" not in readme and f"Unicode {VERSION}" not in readme:
        sys.exit(f"{arguments.ucd} is not the Unicode Character Database {VERSION}")
    stale = []
    for name, (_, build) in FILES.items():
        data = build(arguments.ucd)
        target = DATA / name
        if arguments.check:
            if not target.exists() or target.read_bytes() != data:
                stale.append(name)
            continue
        target.write_bytes(data)
    if stale:
        sys.exit(f"out of date: {', '.join(stale)}; run python tools/build_unicode_data.py")


if __name__ == "__main__":
    main()
