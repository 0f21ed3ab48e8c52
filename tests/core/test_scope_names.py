"""A scope name cannot look like the reader's own scope, like the label's ` ∩ `, or hide an edge.

What looks alike is Unicode's rule: UTS #39 skeletons over `confusables.txt`. The oracle here
reads the vendored `confusables.txt` on its own (a line's source and its prototype) and builds
look-alikes from it, so the law is held to Unicode's data rather than to examples we chose.
"""

from __future__ import annotations

import re
from functools import cache
from importlib.resources import files

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from aizk_integrations import Scope, ScopeDirectory

READS_AS_PRIVATE = "reads as 'private' is the reader's own scope"
READS_AS_SEPARATOR = r"which reads as '∩', the join of the scopes of one item"
AT_AN_EDGE = "must not start or end with an invisible or blank character"


@cache
def look_alikes() -> dict[str, list[str]]:
    """Each prototype in `confusables.txt` that is one character, and the characters mapped
    to it (`source ; prototype ; MA # ...`)."""
    data = (files("aizk_integrations") / "data" / "confusables.txt").read_text("utf-8-sig")
    found: dict[str, list[str]] = {}
    for source, prototype in re.findall(r"^([0-9A-F]+) ;\t([0-9A-F]+) ;\t", data, re.MULTILINE):
        found.setdefault(chr(int(prototype, 16)), []).append(chr(int(source, 16)))
    return found


def test_the_vendored_data_is_unicodes_version_15() -> None:
    data = (files("aizk_integrations") / "data" / "confusables.txt").read_text("utf-8-sig")
    assert data.startswith("# confusables.txt\n")
    assert "# Unicode Security Mechanisms for UTS #39\n# Version: 15.0.0\n" in data
    assert sum(map(len, look_alikes().values())) > 4000


def letter_look_alikes(letter: str) -> list[str]:
    """The letter in either case, and every character Unicode maps to one of those."""
    cases = [letter, letter.upper()]
    return [*cases, *(char for case in cases for char in look_alikes().get(case, []))]


@st.composite
def private_look_alikes(draw: st.DrawFn) -> str:
    """`private` in any case, each letter perhaps swapped for a character Unicode maps to it."""
    return "".join(draw(st.sampled_from(letter_look_alikes(letter))) for letter in "private")


@settings(max_examples=500)
@given(private_look_alikes())
def test_a_name_unicode_says_looks_like_private_is_refused(name: str) -> None:
    if name == "private":
        return
    with pytest.raises(ValidationError, match=READS_AS_PRIVATE):
        Scope(name=name)


@pytest.mark.parametrize(
    "name",
    [
        "Private",
        "PRIVATE",
        "\u0440rivate",  # Cyrillic er
        "pr\u0456vate",  # Cyrillic i
        "\uff50\uff52\uff49\uff56\uff41\uff54\uff45",  # full-width
        "\uff30\uff32\uff29\uff36\uff21\uff34\uff25",  # full-width capitals
        "private\u034f",  # combining grapheme joiner
        "private\ufe0f",  # variation selector
        "private\u200d",  # zero-width joiner
        "p\u00adrivate",  # soft hyphen inside
    ],
)
def test_a_name_that_reads_as_private_is_refused_however_the_directory_is_built(
    name: str,
) -> None:
    with pytest.raises(ValidationError, match=READS_AS_PRIVATE):
        Scope(name=name)
    with pytest.raises(ValueError, match=READS_AS_PRIVATE):
        ScopeDirectory.model_validate(
            {"scopes": {"me": {"name": "private"}, "org": {"name": name}}}
        )


@pytest.mark.parametrize(
    "separator",
    # the separator's prototype, and all Unicode maps to it but the separator itself (which has
    # a message of its own)
    ["\u0548", *sorted(set(look_alikes()["\u0548"]) - {"\u2229"})],
)
def test_a_name_holding_any_look_alike_of_the_separator_is_refused(separator: str) -> None:
    name = f"book {separator} club"
    with pytest.raises(ValidationError, match=READS_AS_SEPARATOR) as raised:
        Scope(name=name)
    assert f"must not contain {separator!r} (U+{ord(separator):04X})" in str(raised.value)


@pytest.mark.parametrize(
    ("name", "edge"),
    [
        ("\u3164team", "U+3164"),  # Hangul filler
        ("team\u3164", "U+3164"),
        ("\u115fteam", "U+115F"),  # Hangul choseong filler
        ("team\u2800", "U+2800"),  # Braille blank
        ("team\ufe0f", "U+FE0F"),  # variation selector
        ("\u034fteam", "U+034F"),  # combining grapheme joiner
        ("team\U000e0100", "U+E0100"),  # variation selector supplement
    ],
)
def test_an_invisible_or_blank_character_at_an_edge_is_refused(name: str, edge: str) -> None:
    with pytest.raises(ValidationError, match=AT_AN_EDGE) as raised:
        Scope(name=name)
    assert f"(such as {edge}), which would make it look like another name: {name!r}" in str(
        raised.value
    )


@pytest.mark.parametrize(
    "name", ["team \u2764\ufe0f fans", "book-club", "\u0578", "privat", "private club", "книга"]
)
def test_a_name_that_looks_like_no_other_is_accepted(name: str) -> None:
    assert Scope(name=name).name == name
