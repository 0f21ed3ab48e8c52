"""Whether two strings look alike, by Unicode's own rule: UTS #39 confusable skeletons.

Two strings are confusable when their skeletons are equal (UTS #39, section 4): a skeleton is
the string in NFD, with its default-ignorable code points removed, each character replaced by
its prototype from `confusables.txt`, and put in NFD again. A scope name is held to it
(`_scope_names.check_scope_name`) so that no organization can be called something that reads as
`private` (with a Cyrillic er, U+0440, in full-width letters, or followed by a variation
selector) or that holds a look-alike of the label's ` ∩ ` (`⋂`, Armenian `Ո`).

The data is Unicode's, as it is, shipped with the package (no Python library computes the
skeleton: `confusable_homoglyphs` flags mixed scripts, `confusables` matches pairs of its own
list, and an ICU binding would make a compiled dependency of a two-dependency core):

* `data/confusables.txt`: Unicode Security Mechanisms for UTS #39, version 15.0.0, taken from
  ICU 72.1's source (`icu/source/data/unidata/confusables.txt`), sha256 `2b101308...c29ce64`;
* `data/default_ignorable.txt`: the `Default_Ignorable_Code_Point` section of the Unicode
  Character Database's `DerivedCoreProperties.txt`, version 15.0.0, from the same source.

Both load on first use, not at import.
"""

from __future__ import annotations

import unicodedata
from functools import cache
from importlib.resources import files

_DATA = files("aizk_integrations") / "data"


def skeleton(text: str) -> str:
    """UTS #39's skeleton of `text`: for comparing, never for showing."""
    prototypes = _prototypes()
    ignorable = _default_ignorable()
    mapped = "".join(
        prototypes.get(char, char)
        for char in unicodedata.normalize("NFD", text)
        if char not in ignorable
    )
    return unicodedata.normalize("NFD", mapped)


def default_ignorable(char: str) -> bool:
    """Whether Unicode says `char` is to be rendered as nothing when unsupported (zero-width
    joiners, variation selectors, the combining grapheme joiner, Hangul fillers, ...)."""
    return char in _default_ignorable()


@cache
def _prototypes() -> dict[str, str]:
    """Each confusable character's prototype: `source ; target ; type # comment` lines."""
    prototypes = {}
    for line in (_DATA / "confusables.txt").read_text(encoding="utf-8-sig").splitlines():
        fields = line.split("#", 1)[0].split(";")
        if len(fields) < 3:
            continue
        source = _code_points(fields[0])
        prototypes[source] = _code_points(fields[1])
    return prototypes


@cache
def _default_ignorable() -> frozenset[str]:
    """The code points of `data/default_ignorable.txt`: `first..last ; property` lines."""
    chars: set[str] = set()
    for line in (_DATA / "default_ignorable.txt").read_text(encoding="utf-8").splitlines():
        fields = line.split("#", 1)[0].split(";")
        if len(fields) < 2:
            continue
        first, _, last = fields[0].strip().partition("..")
        chars.update(map(chr, range(int(first, 16), int(last or first, 16) + 1)))
    return frozenset(chars)


def _code_points(field: str) -> str:
    return "".join(chr(int(point, 16)) for point in field.split())
