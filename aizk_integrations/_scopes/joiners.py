"""Where an invisible format character is part of the text: the joiners a script writes with
(UAX #31, section 2.3) and the joiners and tags of emoji sequences (UTS #51).

A zero-width non-joiner or joiner changes how letters join, and a tag spells out a
subdivision flag; anywhere else such a character shows nothing and makes two different names
look the same. Unicode says where each belongs:

* UAX #31 A1: a non-joiner between two letters that would join, in a cursive script (the
  Persian for books, kitab-ha, has one after its beh): a left- or dual-joining letter,
  transparent marks, the non-joiner, transparent marks, a right- or dual-joining letter;
* UAX #31 A2 and B: a non-joiner or a joiner after a virama, which picks a conjunct's form
  (Sinhala `ශ්‍රී`, Devanagari and Malayalam half and chillu forms): a letter, marks, the
  virama, marks above or below it;
* each in one script, as UAX #31 asks;
* UTS #51: the joiners of an emoji ZWJ sequence (a family, the rainbow flag) and the tags of
  an emoji tag sequence (the flags of England, Scotland and Wales), as Unicode 15.0 lists the
  recommended ones; with or without their emoji variation selectors;
* a variation selector after a base it makes a sequence with (`StandardizedVariants.txt`,
  `emoji-variation-sequences.txt`: the emoji style of `©`, a Mongolian letter's third form),
  which shows that base in another form, even at the end of a name.
"""

from __future__ import annotations

import unicodedata

from aizk_integrations._scopes.unicode_data import (
    emoji_sequences,
    joining_type,
    resolved_scripts,
    variation_sequences,
    virama,
)

ZWNJ = "\u200c"
ZWJ = "\u200d"
TAGS = frozenset(map(chr, range(0xE0020, 0xE0080)))
SELECTORS = frozenset(
    [
        *map(chr, range(0xFE00, 0xFE10)),
        *map(chr, range(0xE0100, 0xE01F0)),
        *"\u180b\u180c\u180d\u180f",
    ]
)
"""The variation selectors: Unicode's, its supplement's and Mongolian's free ones."""


def placed(text: str) -> frozenset[int]:
    """The positions of the joiners and tags of `text` that Unicode gives a place there."""
    found: set[int] = set()
    if ZWJ in text:
        found.update(_inside(text, "RGI_Emoji_ZWJ_Sequence"))
    if not TAGS.isdisjoint(text):
        found.update(_inside(text, "RGI_Emoji_Tag_Sequence"))
    found.update(position for position, char in enumerate(text) if _belongs(text, position, char))
    return frozenset(found)


def _belongs(text: str, position: int, char: str) -> bool:
    if char in (ZWJ, ZWNJ):
        return _after_a_virama(text, position) or (char == ZWNJ and _breaks_a_join(text, position))
    return (
        char in SELECTORS
        and position > 0
        and text[position - 1 : position + 1] in variation_sequences()
    )


def _inside(text: str, kind: str) -> list[int]:
    return [
        position
        for sequence in emoji_sequences(kind).finditer(text)
        for position in range(sequence.start(), sequence.end())
    ]


def _breaks_a_join(text: str, position: int) -> bool:
    """UAX #31 A1: `/$LJ $T* ZWNJ $T* $RJ/`, in one script."""
    before = position - 1
    while before >= 0 and joining_type(text[before]) == "T":
        before -= 1
    after = position + 1
    while after < len(text) and joining_type(text[after]) == "T":
        after += 1
    return (
        before >= 0
        and after < len(text)
        and joining_type(text[before]) in ("D", "L")
        and joining_type(text[after]) in ("D", "R")
        and resolved_scripts(text[before : after + 1]) != frozenset()
    )


def _after_a_virama(text: str, position: int) -> bool:
    """UAX #31 A2 and B: `/$L $M* $V $M₁* (ZWNJ|ZWJ)/`, in one script."""
    at = position - 1
    while at >= 0 and not virama(text[at]) and _mark(text[at]) and unicodedata.combining(text[at]):
        at -= 1
    if at < 0 or not virama(text[at]):
        return False
    at -= 1
    while at >= 0 and _mark(text[at]):
        at -= 1
    return (
        at >= 0
        and unicodedata.category(text[at]).startswith("L")
        and resolved_scripts(text[at:position]) != frozenset()
    )


def _mark(char: str) -> bool:
    return unicodedata.category(char) == "Mn"
