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
READS_AS_SEPARATOR = r"reads as '∩', the join of the scopes of one item"
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
def test_a_name_holding_any_look_alike_of_the_separator_between_spaces_is_refused(
    separator: str,
) -> None:
    for name in (f"book {separator} club", separator, f"{separator} club", f"book {separator}"):
        with pytest.raises(ValidationError, match=READS_AS_SEPARATOR) as raised:
            Scope(name=name)
        assert f"must not contain {separator!r} (U+{ord(separator):04X})" in str(raised.value)


@pytest.mark.parametrize("symbol", ["\u22c2", "\U0001d245"])
def test_a_symbol_that_looks_like_the_separator_is_refused_anywhere(symbol: str) -> None:
    with pytest.raises(ValidationError, match=READS_AS_SEPARATOR):
        Scope(name=f"book{symbol}club")


@pytest.mark.parametrize(
    "name",
    [
        "\u0548\u0582\u057d\u0561\u0576\u0578\u0572\u0576\u0565\u0580",  # Armenian: students
        "\u0548\u0580\u0578\u0576\u0578\u0582\u0574",  # Armenian: search
        "\u12e8\u1218\u133d\u1210\u134d \u12ad\u1260\u1265",  # Amharic: book club
        "\u1403\u14c4\u1483\u144e\u1450\u1466",  # Inuktitut
        "\ua4e2\ua4f5\ua4f2",  # Lisu
        "\u0548\u0580\u0578\u0576\u0578\u0582\u0574 2026",  # digits are every script's
    ],
)
def test_a_letter_that_looks_like_the_separator_among_letters_of_its_script_is_a_letter(
    name: str,
) -> None:
    assert Scope(name=name).name == name


@pytest.mark.parametrize(
    ("name", "scripts"),
    [
        ("book\u0548club", "Armenian and Latin"),
        ("\u043a\u043d\u0438\u0433\u0430\u1260\u043a\u043b\u0443\u0431", "Cyrillic and Ethiopic"),
        ("a\u144eb-club", "Canadian Aboriginal and Latin"),
    ],
)
def test_a_letter_that_looks_like_the_separator_in_a_word_of_another_script_is_refused(
    name: str, scripts: str
) -> None:
    with pytest.raises(ValidationError, match=READS_AS_SEPARATOR) as raised:
        Scope(name=name)
    assert f"in a word that mixes scripts ({scripts})" in str(raised.value)


@pytest.mark.parametrize(
    "name",
    [
        "\u06a9\u062a\u0627\u0628\u200c\u0647\u0627",  # Persian: books
        "\u0dc1\u0dca\u200d\u0dbb\u0dd3 \u0dbd\u0d82\u0d9a\u0dcf",  # Sinhala: Sri Lanka
        "\u0915\u094d\u200d\u0937",  # Devanagari half form: ZWJ after virama
        "\u0915\u094d\u200c\u0937",  # Devanagari: ZWNJ after virama
        "\u0d05\u0d35\u0d28\u0d4d\u200d \u0d35\u0d28\u0d4d\u0d28\u0d41",  # Malayalam chillu
        "\U0001f468\u200d\U0001f469\u200d\U0001f467",  # family
        "\U0001f3f3\ufe0f\u200d\U0001f308",  # rainbow flag
        "\U0001f3f3\u200d\U0001f308",  # ... without its variation selector
        "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",  # Scotland
        "\U0001f1ef\U0001f1f5 club",  # a flag
        "\u00a9\ufe0f",  # a variation sequence, at the end
    ],
)
def test_joiners_tags_and_selectors_where_unicode_places_them_are_ordinary_text(name: str) -> None:
    assert Scope(name=name).name == name


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("book\u200dclub", "may hold a zero-width joiner (U+200D) only where its script"),
        ("book\u200cclub", "may hold a zero-width non-joiner (U+200C) only where its script"),
        # after alef, which joins nothing on its left: the non-joiner changes nothing there
        ("\u0627\u200c\u0628", "zero-width non-joiner (U+200C) only where"),
        # a Devanagari virama on a Latin letter: UAX #31 asks for one script
        ("a\u094d\u200db", "zero-width joiner (U+200D) only where"),
        ("\U0001f600\u200d\U0001f600", "zero-width joiner (U+200D) only where"),
        ("team\U000e0067", "tag character (U+E0067) only inside an emoji tag sequence"),
        ("team\u202eclub", "must not contain control or format characters (such as U+202E)"),
    ],
)
def test_joiners_and_tags_anywhere_else_are_refused_saying_where_they_belong(
    name: str, message: str
) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        Scope(name=name)


@pytest.mark.parametrize("name", ["book\nclub", "book\r\nclub", "book\u2028club", "book\x85club"])
def test_a_name_that_breaks_a_line_is_refused(name: str) -> None:
    with pytest.raises(ValidationError, match="a scope name must be one line"):
        Scope(name=name)


@pytest.mark.parametrize(
    "name",
    [
        "\u1d18\u0280\u026a\u1d20\u1d00\u1d1b\u1d07",  # small capitals
        "\u1d18\u0280\u026a\u1d20\u1d00\u0442\u1d07",  # ... with a Cyrillic te
        "pr\u0131\u0307vate",  # dotless i and a dot above
        "pri\u0307vate",  # i and a dot above
        "PR\u0130VATE",  # capital I with a dot above
        "\uabb2\uab71\uab75\uaba9\uab7a\uab72\uab7c",  # Cherokee small letters
        "\U0001f17f\U0001f181\U0001f178\U0001f185\U0001f170\U0001f183\U0001f174",  # squared
        "\U0001d429\U0001d42b\U0001d422\U0001d42f\U0001d41a\U0001d42d\U0001d41e",  # math bold
    ],
)
def test_a_name_that_reads_as_private_by_its_folded_forms_is_refused(name: str) -> None:
    with pytest.raises(ValidationError, match=READS_AS_PRIVATE):
        Scope(name=name)


def test_a_lone_surrogate_in_a_name_is_refused_as_text_no_encoding_can_carry() -> None:
    with pytest.raises(ValidationError, match="lone surrogate \\(U\\+DCE9\\) at character 3"):
        Scope(name="caf\udce9")


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
    "name",
    ["team \u2764\ufe0f fans", "book-club", "\u0578", "privat", "private club", "книга"],
)
def test_a_name_that_looks_like_no_other_is_accepted(name: str) -> None:
    assert Scope(name=name).name == name
