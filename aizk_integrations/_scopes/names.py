"""What a scope may be called: no name may forge an item's label or pass for another name.

The block labels an item with its scope names joined by ` ∩ ` in one code span. What forges a
label is narrow, and each rule below is one way to do it; what a script needs to be written is
not among them, so a name in any language passes (`tests/data/accepted_scope_names.json`
holds the name of every language and script CLDR knows, in itself). What looks alike is
Unicode's data, not a list of ours (`_looks`, `_unicode_data`):

* the separator: `∩` itself, a symbol that looks like it (`⋂`), or a letter that looks like it
  standing as a word of its own (`book Ո club`), which would pass for two scopes; such a letter
  is ordinary text among the letters of its own script (Armenian `Որոնում`, Amharic
  `ክበብ`), and reads as the separator only in a word that mixes scripts (`bookՈclub`), by
  UTS #39's mixed-script test;
* `private`: a name that reads as the reader's own scope but is not exactly it, in any mix of
  cases, by the skeletons of its NFKC and case-folded forms, dots and small capitals read as a
  reader reads them;
* a line break, which the label would show as a space, so the name would look like another;
* invisible format characters (bidi controls, zero-width spaces) except where a script or an
  emoji sequence writes them (`_joiners`), and spaces or invisible characters at an edge;
* nothing visible at all.
"""

from __future__ import annotations

import unicodedata
from functools import cache
from itertools import product

from aizk_integrations._errors import quoted
from aizk_integrations._scopes.confusables import default_ignorable, skeleton
from aizk_integrations._scopes.joiners import TAGS, ZWJ, ZWNJ, placed
from aizk_integrations._scopes.looks import looks
from aizk_integrations._scopes.unicode_data import (
    COMMON_SCRIPTS,
    resolved_scripts,
    script_names,
    script_of,
)

PRIVATE = "private"
"""The name a reader's own scope always renders as, whatever its id."""

PUBLIC_NAME = "public"
"""The name the public scope renders as: evidence every reader may read."""

INTERSECTION = " ∩ "
"""How an item's scope names are joined: it is readable only by their intersection."""

_JOIN = INTERSECTION.strip()
_LINE_BREAKS = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")
"""Where `str.splitlines` ends a line: the block folds each into a space in a label."""


def check_scope_name(name: str) -> str:
    """Refuse a name that could forge an item's label or pass for another name; each refusal
    says which of the module's rules the name breaks."""
    if _JOIN in name:
        raise ValueError(
            f"a scope name must not contain {_JOIN!r}, which the block uses to join the scopes "
            f"of one item: {quoted(name)}"
        )
    if name != PRIVATE and not _looks_of_private().isdisjoint(looks(name)):
        raise ValueError(
            f"a scope name that reads as {PRIVATE!r} is the reader's own scope: only that one "
            f"may look like it; give the organization its own name: {quoted(name)}"
        )
    _check_separator(name)
    broken = next((char for char in name if char in _LINE_BREAKS), None)
    if broken is not None:
        raise ValueError(
            f"a scope name must be one line: a line break (U+{ord(broken):04X}) shows as a "
            f"space in the label, so the name would look like another: {quoted(name)}"
        )
    _check_hidden(name)
    if not any(_visible(char) for char in name):
        raise ValueError(
            f"a scope name must contain a visible character, not only spaces or blank "
            f"fillers: {quoted(name)}"
        )
    if name != name.strip():
        raise ValueError(
            "a scope name must not start or end with spaces, which do not show and would "
            f"make it look like another name: {quoted(name)}"
        )
    edges = [at for at in (0, len(name) - 1) if _blank(name[at])]
    # A flag's tag sequence ends on an invisible CANCEL TAG, and `©` in emoji style on a
    # variation selector: there each is part of what shows.
    edge = next((name[at] for at in edges if at not in placed(name)), None)
    if edge is not None:
        raise ValueError(
            f"a scope name must not start or end with an invisible or blank character (such "
            f"as U+{ord(edge):04X}), which would make it look like another name: {quoted(name)}"
        )
    return name


@cache
def _looks_of_private() -> frozenset[str]:
    """What `private` looks like in every mix of capitals and small letters (`Private` reads as
    the reader's own scope too). Folding the case of a name alone would miss some: `I` looks
    like `l`, so `PRlVATE` reads as `PRIVATE` though it folds to no `private`."""
    spellings = product(*[(letter, letter.upper()) for letter in PRIVATE])
    return frozenset().union(*(looks("".join(spelling)) for spelling in spellings))


_SEPARATOR = skeleton(_JOIN)
"""What `∩` looks like: Armenian capital vo, the prototype Unicode maps it to."""


def _check_separator(name: str) -> None:
    """Refuse what reads as the label's ` ∩ `: a look-alike of `∩` that is a symbol, one that
    stands as a word of its own (the label puts ` ∩ ` around a name, so at an edge too), or a
    letter that looks like it in a word that mixes scripts."""
    for word in name.split():
        for char in word:
            if not _looks_like_the_join(char):
                continue
            found = f"{char!r} (U+{ord(char):04X})"
            reads = f"it reads as {_JOIN!r}, the join of the scopes of one item"
            if not unicodedata.category(char).startswith("L"):
                raise ValueError(f"a scope name must not contain {found}: {reads}: {quoted(name)}")
            letter = "among letters of its own script it is a letter like any other"
            if _standing_alone(word, char):
                raise ValueError(
                    f"a scope name must not contain {found} as a word of its own, where {reads} "
                    f"({letter}): {quoted(name)}"
                )
            if resolved_scripts(word) == frozenset():
                mixed = script_names(frozenset(map(script_of, word)) - COMMON_SCRIPTS)
                raise ValueError(
                    f"a scope name must not contain {found} in a word that mixes scripts "
                    f"({mixed}), where {reads} ({letter}): {quoted(name)}"
                )


@cache
def _looks_like_the_join(char: str) -> bool:
    return _SEPARATOR in (skeleton(char), skeleton(unicodedata.normalize("NFKC", char)))


def _standing_alone(word: str, char: str) -> bool:
    """Whether the look-alike is all the word shows: nothing but invisible characters and
    combining marks beside it."""
    return all(
        other == char or _blank(other) or unicodedata.category(other).startswith("M")
        for other in word
    )


def _check_hidden(name: str) -> None:
    hidden = [
        position
        for position, char in enumerate(name)
        if unicodedata.category(char) in _HIDDEN and not char.isspace()
    ]
    if not hidden:
        return
    wherever = placed(name)
    unplaced = next((position for position in hidden if position not in wherever), None)
    if unplaced is None:
        return
    char = name[unplaced]
    if char in (ZWJ, ZWNJ):
        raise ValueError(
            f"a scope name may hold a zero-width {'non-' if char == ZWNJ else ''}joiner "
            f"(U+{ord(char):04X}) only where its script joins letters with it (between "
            "letters that join, after a virama) or inside an emoji sequence; anywhere else it "
            f"does not show, and the name would look like another: {quoted(name)}"
        )
    if char in TAGS:
        raise ValueError(
            f"a scope name may hold a tag character (U+{ord(char):04X}) only inside an emoji "
            f"tag sequence (a subdivision flag); anywhere else it does not show: {quoted(name)}"
        )
    raise ValueError(
        f"a scope name must not contain control or format characters (such as "
        f"U+{ord(char):04X}), which can make it look like another name: {quoted(name)}"
    )


_HIDDEN = frozenset({"Cc", "Cf"})
"""Control and format characters; a control that is a space is left to the edge rule. (Lone
surrogates never get this far: `Scope` refuses them as text no encoding can carry.)"""
_BLANK_SYMBOLS = frozenset("\u2800")
"""BRAILLE PATTERN BLANK: a symbol that renders as nothing, which Unicode does not call
ignorable (the Hangul and Khmer fillers it does, `_confusables.default_ignorable`)."""


def _blank(char: str) -> bool:
    return char.isspace() or default_ignorable(char) or char in _BLANK_SYMBOLS


def _visible(char: str) -> bool:
    """A letter, number, punctuation or symbol that shows; or a code point this Python's Unicode
    does not know yet (Sunuwar's letters on Unicode 14.0), which Unicode says must show as a
    fallback glyph unless it is reserved as default-ignorable."""
    category = unicodedata.category(char)
    return (category[0] in "LNPS" or category == "Cn") and not _blank(char)
