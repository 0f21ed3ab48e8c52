"""Rebuild the scope-name corpora in `tests/data/`: names every language writes, which a `Scope`
must accept, and look-alikes of `private` and of the label's ` ∩ `, which it must refuse.

* `accepted_scope_names.json`: each CLDR locale's name, its language's name and its script's
  name, each in that locale's own language, as Babel ships CLDR (`cldr:<locale>#<which>`);
  the names the scope-name issue reported refused (`aizk:example`); and every emoji sequence
  Unicode recommends, ZWJ, flag, tag, keycap and modifier sequences and single emoji
  (`unicode:<file>#<line>`), from the vendored `emoji_sequences.txt` and
  `emoji_zwj_sequences.txt`.
* `refused_scope_names.json`, each entry with the `rule` it breaks (`private` or `separator`):
  `private` with its letters swapped for every character `confusables.txt` maps to one of them,
  in either case (each swap alone, and mixes in which every look-alike appears), in small
  capitals, with a dot above a dotted or dotless `i`, in full-width and in every style of
  mathematical letters; and every look-alike of `∩` between every look-alike of a space, as a
  word of its own, and inside a word of another script.

Both files are JSON lists, one entry a line, pure ASCII (every other character a `\\u`
escape), in a fixed order with no duplicate names. Run from the repository root, with the
test extra installed (Babel):

    python tools/build_scope_name_corpora.py            # rewrite both files
    python tools/build_scope_name_corpora.py --check    # exit 1 if either is out of date
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import babel
from babel import Locale
from babel.core import get_global, parse_locale
from babel.localedata import locale_identifiers

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "aizk_integrations" / "data"
ACCEPTED = ROOT / "tests" / "data" / "accepted_scope_names.json"
REFUSED = ROOT / "tests" / "data" / "refused_scope_names.json"

EXAMPLES = [
    "\u06a9\u062a\u0627\u0628\u200c\u0647\u0627",  # Persian: books
    "\u06a9\u062a\u0627\u0628\u200c\u062e\u0627\u0646\u0647",  # Persian: library
    "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",  # Persian: I want
    "\u0dc1\u0dca\u200d\u0dbb\u0dd3 \u0dbd\u0d82\u0d9a\u0dcf",  # Sinhala: Sri Lanka
    "\u0915\u094d\u200d\u0937",  # Devanagari: ka, virama, joiner, ssa (half form)
    "\u0915\u094d\u200c\u0937",  # Devanagari: ka, virama, non-joiner, ssa (no conjunct)
    "\u0d05\u0d35\u0d28\u0d4d\u200d \u0d35\u0d28\u0d4d\u0d28\u0d41",  # Malayalam: chillu n
    "\u0d15\u0d4d\u200c\u0d15",  # Malayalam: ka, virama, non-joiner, ka
    "\u12e8\u1218\u133d\u1210\u134d \u12ad\u1260\u1265",  # Amharic: book club
    "\u0548\u0582\u057d\u0561\u0576\u0578\u0572\u0576\u0565\u0580",  # Armenian: students
    "\u0548\u0580\u0578\u0576\u0578\u0582\u0574",  # Armenian: search
    "\u1403\u14c4\u1483\u144e\u1450\u1466",  # Inuktitut, in Canadian Syllabics
    "\ua4e2\ua4f5\ua4f2",  # Lisu letters around UE, which looks like the join
    "\U0001f468\u200d\U0001f469\u200d\U0001f467",  # family: man, woman, girl
    "\U0001f3f3\ufe0f\u200d\U0001f308",  # rainbow flag
    "\U0001f3f3\u200d\U0001f308",  # rainbow flag, without its variation selector
    "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",  # Scotland
    "book club \U0001f3f4\U000e0067\U000e0062\U000e0077\U000e006c\U000e0073\U000e007f",
]
"""The names the scope-name issue found refused, and their kin."""


def cldr_names() -> Iterator[tuple[str, str]]:
    likely = get_global("likely_subtags")
    for identifier in sorted(locale_identifiers()):
        if identifier == "root":
            continue
        locale = Locale.parse(identifier)
        script = locale.script or parse_locale(likely.get(locale.language, identifier))[2]
        found = {
            "autonym": locale.get_display_name(locale),
            "language": locale.get_language_name(locale),
            "script": locale.scripts.get(script) if script else None,
        }
        for which, name in found.items():
            if name:
                yield name, f"cldr:{identifier}#{which}"


def emoji_names() -> Iterator[tuple[str, str]]:
    for file in ("emoji_zwj_sequences.txt", "emoji_sequences.txt"):
        lines = (DATA / file).read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, 1):
            fields = line.split("#", 1)[0].split(";")
            if len(fields) < 2:
                continue
            first, _, last = fields[0].strip().partition("..")
            if last:  # a range of single emoji
                for point in range(int(first, 16), int(last, 16) + 1):
                    yield chr(point), f"unicode:{file}#{number}"
                continue
            yield (
                "".join(chr(int(point, 16)) for point in first.split()),
                f"unicode:{file}#{number}",
            )


def confusable_sources() -> dict[str, list[str]]:
    """Each one-character prototype of `confusables.txt` and the characters mapped to it."""
    text = (DATA / "confusables.txt").read_text(encoding="utf-8-sig")
    found: dict[str, list[str]] = {}
    for source, prototype in re.findall(r"^([0-9A-F]+) ;\t([0-9A-F]+) ;\t", text, re.MULTILINE):
        found.setdefault(chr(int(prototype, 16)), []).append(chr(int(source, 16)))
    return found


def small_capitals() -> dict[str, str]:
    """Each Latin capital and the small capitals that read as it (`data/small_capitals.txt`)."""
    found: dict[str, str] = {}
    for line in (DATA / "small_capitals.txt").read_text(encoding="utf-8").splitlines():
        fields = line.split("#", 1)[0].split(";")
        if len(fields) == 2 and chr(int(fields[1], 16)) not in found:
            found[chr(int(fields[1], 16))] = chr(int(fields[0], 16))
    return found


MATH_STYLES = [
    "BOLD",
    "ITALIC",
    "BOLD ITALIC",
    "SCRIPT",
    "BOLD SCRIPT",
    "FRAKTUR",
    "DOUBLE-STRUCK",
    "BOLD FRAKTUR",
    "SANS-SERIF",
    "SANS-SERIF BOLD",
    "SANS-SERIF ITALIC",
    "SANS-SERIF BOLD ITALIC",
    "MONOSPACE",
]
_LETTERLIKE = {"SCRIPT": "SCRIPT", "FRAKTUR": "BLACK-LETTER", "DOUBLE-STRUCK": "DOUBLE-STRUCK"}
"""Where the letterlike block holds a style's letter that the mathematical block leaves out."""


def math_letter(style: str, letter: str) -> str:
    case = "CAPITAL" if letter.isupper() else "SMALL"
    try:
        return unicodedata.lookup(f"MATHEMATICAL {style} {case} {letter.upper()}")
    except KeyError:
        return unicodedata.lookup(f"{_LETTERLIKE[style]} {case} {letter.upper()}")


def private_look_alikes() -> Iterator[tuple[str, str]]:
    sources = confusable_sources()
    letters = [
        [letter, letter.upper(), *sources.get(letter, []), *sources.get(letter.upper(), [])]
        for letter in "private"
    ]
    for position, alternatives in enumerate(letters):
        for alternative in alternatives:
            name = "private"[:position] + alternative + "private"[position + 1 :]
            yield name, f"confusables:private#{position}"
    for turn in range(max(map(len, letters))):
        mix = "".join(each[(turn + at) % len(each)] for at, each in enumerate(letters))
        yield mix, "confusables:private#mix"
    capitals = small_capitals()
    small = "".join(capitals[letter] for letter in "PRIVATE")
    yield small, "aizk:small-capitals"
    for position in range(len(small)):
        yield (
            "private"[:position] + small[position] + "private"[position + 1 :],
            ("aizk:small-capitals"),
        )
        yield small[:position] + "PRIVATE"[position] + small[position + 1 :], "aizk:small-capitals"
    for dotted in [*letters[2], "\u0130"]:
        for form in ("pr{}vate", "PR{}VATE", "Pr{}vate"):
            yield form.format(dotted + "\u0307"), "aizk:dot-above"
    yield "PR\u0130VATE", "aizk:dot-above"
    full = {letter: chr(ord(letter) + 0xFEE0) for letter in "privatePRIVATE"}
    for spelling in ("private", "PRIVATE", "Private", "pRiVaTe"):
        yield "".join(full[letter] for letter in spelling), "aizk:fullwidth"
        for style in MATH_STYLES:
            yield "".join(math_letter(style, letter) for letter in spelling), "aizk:math"
    for turn in range(len(MATH_STYLES)):
        letters_ = [
            math_letter(MATH_STYLES[(turn + at) % len(MATH_STYLES)], letter)
            for at, letter in enumerate("private")
        ]
        letters_[turn % 7] = full["private"[turn % 7]]
        yield "".join(letters_), "aizk:math-mix"


def separator_look_alikes() -> Iterator[tuple[str, str]]:
    sources = confusable_sources()
    joins = ["\u0548", *sources["\u0548"]]
    spaces = [" ", *sources[" "], "\u3000", "\u205f"]
    for join in joins:
        for space in dict.fromkeys(spaces):
            yield f"book{space}{join}{space}club", "confusables:separator"
        yield join, "confusables:separator#alone"
        yield f"{join} club", "confusables:separator#edge"
        yield f"book {join}", "confusables:separator#edge"
        yield f"book{join}club", "confusables:separator#mixed-script"


def entries(found: Iterator[tuple[str, str]], rule: str | None = None) -> list[str]:
    lines = []
    seen: set[str] = set()
    for name, source in found:
        if name in seen or name == "private":  # the reader's own scope is the one exception
            continue
        seen.add(name)
        entry = {"source": source, "text": name}
        if rule is not None:
            entry["rule"] = rule
        lines.append(json.dumps(entry, ensure_ascii=True, sort_keys=True))
    return lines


def render(lines: list[str]) -> str:
    return "[\n" + ",\n".join(lines) + "\n]\n"


def accepted() -> str:
    found = [*cldr_names(), *((name, "aizk:example") for name in EXAMPLES), *emoji_names()]
    return render(entries(iter(found)))


def refused() -> str:
    private = entries(private_look_alikes(), "private")
    separator = entries(separator_look_alikes(), "separator")
    return render([*private, *separator])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a file is out of date")
    arguments = parser.parse_args()
    print(f"Babel {babel.__version__}", file=sys.stderr)
    stale = []
    for path, text in ((ACCEPTED, accepted()), (REFUSED, refused())):
        if arguments.check:
            if not path.exists() or path.read_text(encoding="ascii") != text:
                stale.append(path.name)
            continue
        path.write_text(text, encoding="ascii")
        print(f"{path.relative_to(ROOT)}: {text.count(chr(10)) - 2} names", file=sys.stderr)
    if stale:
        sys.exit(f"out of date: {', '.join(stale)}; run python tools/build_scope_name_corpora.py")


if __name__ == "__main__":
    main()
