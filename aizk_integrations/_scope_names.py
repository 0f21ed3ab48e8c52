"""What a scope may be called: no name may forge an item's label or pass for another name."""

from __future__ import annotations

import unicodedata
from functools import cache
from itertools import product

from aizk_integrations._confusables import default_ignorable, skeleton
from aizk_integrations._errors import quoted

PRIVATE = "private"
"""The name a reader's own scope always renders as, whatever its id."""

PUBLIC_NAME = "public"
"""The name the public scope renders as: evidence every reader may read."""

INTERSECTION = " ∩ "
"""How an item's scope names are joined: it is readable only by their intersection."""


def check_scope_name(name: str) -> str:
    """Refuse a name that could forge an item's label or pass for another name.

    The block labels an item with its scope names joined by " ∩ " in one code span, so a name
    holding the separator, or a character that looks like it, would pass for two scopes; a name
    that reads as `private` but is not exactly it would pass for the reader's own memory. What
    looks alike is Unicode's rule, not a list of ours: the confusable skeletons of UTS #39
    (`_confusables`) of the name, and of it in NFKC, so full-width letters read as the letters
    they show, held to `private` in any mix of cases (the label `Private` reads as it too). A
    name with nothing visible would render as stray ticks, or as a blank that looks like another
    name; control and format characters (bidi overrides, zero-width joiners) anywhere, and
    spaces or invisible characters at an edge, can make a name look like another.
    """
    if INTERSECTION.strip() in name:
        raise ValueError(
            f"a scope name must not contain {INTERSECTION.strip()!r}, which the block uses to "
            f"join the scopes of one item: {quoted(name)}"
        )
    if name != PRIVATE and not _looks_of_private().isdisjoint(_looks(name)):
        raise ValueError(
            f"a scope name that reads as {PRIVATE!r} is the reader's own scope: only that one "
            f"may look like it; give the organization its own name: {quoted(name)}"
        )
    separator = skeleton(INTERSECTION.strip())
    if any(separator in look for look in _looks(name)):
        look_alike = next(char for char in name if any(separator in look for look in _looks(char)))
        raise ValueError(
            f"a scope name must not contain {look_alike!r} (U+{ord(look_alike):04X}), which "
            f"reads as {INTERSECTION.strip()!r}, the join of the scopes of one item: "
            f"{quoted(name)}"
        )
    hidden = [char for char in name if unicodedata.category(char) in _HIDDEN and not char.isspace()]
    if hidden:
        raise ValueError(
            f"a scope name must not contain control, format or surrogate characters "
            f"(such as U+{ord(hidden[0]):04X}), which can make it look like another name: "
            f"{quoted(name)}"
        )
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
    edge = next((char for char in (name[0], name[-1]) if _blank(char)), None)
    if edge is not None:
        raise ValueError(
            f"a scope name must not start or end with an invisible or blank character (such "
            f"as U+{ord(edge):04X}), which would make it look like another name: {quoted(name)}"
        )
    return name


def _looks(name: str) -> tuple[str, str]:
    """What a name looks like: the UTS #39 skeleton of it, and of its NFKC form. Unicode's
    data leaves full-width and other compatibility letters to NFKC (U+FF52 is the `r` it shows
    there), and NFKC takes some look-alikes apart (the ogonek U+02DB, which looks like `i`)."""
    return skeleton(name), skeleton(unicodedata.normalize("NFKC", name))


@cache
def _looks_of_private() -> frozenset[str]:
    """What `private` looks like in every mix of capitals and small letters (`Private` reads as
    the reader's own scope too). Folding the case of a name instead would miss some: `I` looks
    like `l`, and a Cherokee small letter folds to a capital that looks like no Latin one."""
    spellings = product(*[(letter, letter.upper()) for letter in PRIVATE])
    return frozenset(skeleton("".join(spelling)) for spelling in spellings)


_HIDDEN = frozenset({"Cc", "Cf"})
"""Control and format characters; a control that is a space or a line break is folded like one
instead. (Lone surrogates never get this far: pydantic refuses them in a constrained string.)"""
_BLANK_SYMBOLS = frozenset("\u2800")
"""BRAILLE PATTERN BLANK: a symbol that renders as nothing, which Unicode does not call
ignorable (the Hangul and Khmer fillers it does, `_confusables.default_ignorable`)."""


def _blank(char: str) -> bool:
    return char.isspace() or default_ignorable(char) or char in _BLANK_SYMBOLS


def _visible(char: str) -> bool:
    return unicodedata.category(char)[0] in "LNPS" and not _blank(char)
