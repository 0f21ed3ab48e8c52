"""Unicode's own data, as the scope-name rule reads it: scripts, joining types, viramas, soft
dots, small capitals, variation sequences and the emoji sequences that hold joiners and tags.

Every file is vendored in `data/` with its source and version (`data/README.md`), from the
Unicode Character Database 15.0.0 (the version of `confusables.txt`), rebuilt by
`tools/build_unicode_data.py`; each loads on first use, never at import and never from the
network. What Python's own `unicodedata` knows (categories, combining classes, NFKC, case
folding) is the running Python's Unicode version, 14.0.0 on Python 3.11: the few characters
Unicode 15.0 added are unknown to it, and read as unassigned.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import cache
from importlib.resources import files

_DATA = files("aizk_integrations") / "data"

COMMON_SCRIPTS = frozenset({"Zyyy", "Zinh"})
"""Common and Inherited: characters every script uses (digits, punctuation, combining marks)."""

_AUGMENTED = {
    "Hani": frozenset({"Hani", "Hanb", "Jpan", "Kore"}),
    "Hira": frozenset({"Hira", "Jpan"}),
    "Kana": frozenset({"Kana", "Jpan"}),
    "Hang": frozenset({"Hang", "Kore"}),
    "Bopo": frozenset({"Bopo", "Hanb"}),
}
"""UTS #39's augmented script sets (section 5.1): Japanese mixes Han, Hiragana and Katakana,
Korean Han and Hangul, and Han with Bopomofo is one writing system too."""


class _Ranges:
    """A property over code point ranges (`first..last ; value` lines), found by bisection."""

    __slots__ = ("_firsts", "_lasts", "_values")

    def __init__(self, rows: list[tuple[int, int, str]]) -> None:
        rows.sort()
        self._firsts = [first for first, _, _ in rows]
        self._lasts = [last for _, last, _ in rows]
        self._values = [value for _, _, value in rows]

    def get(self, char: str) -> str | None:
        point = ord(char)
        at = bisect_right(self._firsts, point) - 1
        return self._values[at] if at >= 0 and point <= self._lasts[at] else None


def _rows(name: str) -> list[tuple[int, int, str]]:
    """The `first..last ; value # comment` lines of a vendored file."""
    rows = []
    for line in (_DATA / name).read_text(encoding="utf-8").splitlines():
        fields = line.split("#", 1)[0].split(";")
        if len(fields) < 2:
            continue
        first, _, last = fields[0].strip().partition("..")
        rows.append((int(first, 16), int(last or first, 16), fields[1].strip()))
    return rows


@cache
def _script_names() -> dict[str, str]:
    """Each script's long name (`Scripts.txt` writes those) to its short one (`scx` uses those)."""
    names = {}
    for line in (_DATA / "script_aliases.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith("sc ;"):
            _, short, long, *_ = (field.strip() for field in line.split(";"))
            names[long] = short
    return names


@cache
def _scripts() -> _Ranges:
    names = _script_names()
    return _Ranges([(first, last, names[long]) for first, last, long in _rows("scripts.txt")])


@cache
def _script_extensions() -> _Ranges:
    return _Ranges(_rows("script_extensions.txt"))


def script_of(char: str) -> str:
    """A character's Script property (short name; `Zzzz` for an unassigned one)."""
    return _scripts().get(char) or "Zzzz"


def scripts_of(char: str) -> frozenset[str]:
    """The scripts a character is written in: its Script_Extensions (short names), augmented as
    UTS #39 section 5.1 does; `COMMON_SCRIPTS` members for Common and Inherited characters."""
    extensions = _script_extensions().get(char)
    found = extensions.split() if extensions else [script_of(char)]
    return frozenset().union(*(_AUGMENTED.get(script, {script}) for script in found))


def resolved_scripts(text: str) -> frozenset[str] | None:
    """UTS #39's resolved script set of `text` (section 5.1): the scripts every character of it
    is written in, Common and Inherited ones counting as any; `None` for text of those alone
    (any script), an empty set for text that mixes scripts."""
    resolved: frozenset[str] | None = None
    for char in text:
        scripts = scripts_of(char)
        if scripts & COMMON_SCRIPTS:
            continue
        resolved = scripts if resolved is None else resolved & scripts
    return resolved


def script_names(scripts: frozenset[str]) -> str:
    """Short script names as a reader knows them: `Armenian and Latin`."""
    longs = {short: long for long, short in _script_names().items()}
    named = sorted(longs.get(script, script).replace("_", " ") for script in scripts)
    return " and ".join([", ".join(named[:-1]), named[-1]] if len(named) > 1 else named)


@cache
def _joining_types() -> _Ranges:
    return _Ranges(_rows("joining_type.txt"))


def joining_type(char: str) -> str | None:
    """ArabicShaping's Joining_Type (`D`, `R`, `L`, `C`, `T`, or None for non-joining)."""
    return _joining_types().get(char)


@cache
def _viramas() -> frozenset[str]:
    return frozenset(
        chr(point) for first, last, _ in _rows("virama.txt") for point in _span(first, last)
    )


def virama(char: str) -> bool:
    """Whether `char` has Canonical_Combining_Class Virama (9): it makes a conjunct."""
    return char in _viramas()


@cache
def _soft_dotted() -> frozenset[str]:
    return frozenset(
        chr(point) for first, last, _ in _rows("soft_dotted.txt") for point in _span(first, last)
    )


def soft_dotted(char: str) -> bool:
    """Whether `char` is Soft_Dotted (`i`, `j`, ...): its dot is the one a dot above would be."""
    return char in _soft_dotted()


@cache
def small_capitals() -> dict[str, str]:
    """Each small capital (and negative squared or circled capital) to the Latin capital it
    reads as (`data/small_capitals.txt`)."""
    return {chr(first): chr(int(value, 16)) for first, _, value in _rows("small_capitals.txt")}


@cache
def emoji_sequences(kind: str) -> re.Pattern[str]:
    """A pattern matching any of the RGI emoji sequences of one kind (`RGI_Emoji_ZWJ_Sequence`
    from `emoji-zwj-sequences.txt`, `RGI_Emoji_Tag_Sequence` from `emoji-sequences.txt`),
    longest first, so a sequence that holds another is found whole; with or without the emoji
    variation selectors (U+FE0F) it lists, which keyboards often leave out."""
    sequences = set()
    for name in ("emoji_zwj_sequences.txt", "emoji_sequences.txt"):
        for line in (_DATA / name).read_text(encoding="utf-8").splitlines():
            fields = line.split("#", 1)[0].split(";")
            if len(fields) >= 2 and fields[1].strip() == kind:
                sequences.add("".join(chr(int(point, 16)) for point in fields[0].split()))
    ordered = sorted(sequences, key=len, reverse=True)
    return re.compile("|".join(re.escape(each).replace("\ufe0f", "\ufe0f?") for each in ordered))


@cache
def variation_sequences() -> frozenset[str]:
    """Every base and variation selector Unicode lists as a sequence (`StandardizedVariants.txt`,
    `emoji-variation-sequences.txt`): there the selector picks a glyph, and is part of the text."""
    found = set()
    for name in ("standardized_variants.txt", "emoji_variation_sequences.txt"):
        for line in (_DATA / name).read_text(encoding="utf-8").splitlines():
            points = line.split("#", 1)[0].split(";", 1)[0].split()
            if len(points) == 2:
                found.add("".join(chr(int(point, 16)) for point in points))
    return frozenset(found)


def _span(first: int, last: int) -> range:
    return range(first, last + 1)
