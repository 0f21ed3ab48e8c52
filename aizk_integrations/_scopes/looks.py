"""What a text looks like to a reader, by Unicode's data: the skeletons that say which names
pass for which.

UTS #39's skeleton (`_confusables.skeleton`) is Unicode's rule for two strings that look
alike, but it leaves some look-alikes to the reader: full-width and mathematical letters to
NFKC (U+FF52 is the `r` it shows), capitals to case folding (`İ` folds to `i` and a dot), a dot
above on an `i` or a `j`, which renders on the dot the letter already has (a dotless or a dotted
`i` and U+0307 show as `i`), and small capitals (`ᴘʀɪᴠᴀᴛᴇ`), which it makes the prototypes of Greek,
Cyrillic and Cherokee letters (`т`, `τ`, `ꭲ` all look like `ᴛ`) but maps to no Latin letter.
So a text looks like the skeletons of all these forms of it.
"""

from __future__ import annotations

import unicodedata

from aizk_integrations._scopes.confusables import skeleton
from aizk_integrations._scopes.unicode_data import small_capitals, soft_dotted

_DOT_ABOVE = "\u0307"
_ABOVE = 230
"""The combining class of marks above: one of those between a soft-dotted letter and a dot
above takes the letter's own dot away (Lithuanian writes i̇̀), so that dot shows."""


def looks(text: str) -> frozenset[str]:
    """Every way `text` reads: the skeletons of it, of its NFKC form and of that case-folded,
    each with its hidden dots dropped, and with its small capitals read as capitals."""
    normal = unicodedata.normalize("NFKC", text)
    forms = {text, normal, unicodedata.normalize("NFKC", normal.casefold())}
    found = set()
    for form in forms:
        look = _without_hidden_dots(skeleton(form))
        found.add(look)
        capitals = small_capitals()
        read = "".join(capitals.get(char, char) for char in look)
        if read != look:
            found.add(_without_hidden_dots(skeleton(read)))
    return frozenset(found)


def _without_hidden_dots(look: str) -> str:
    """A skeleton (NFD) without the dot above each soft-dotted letter already shows."""
    if _DOT_ABOVE not in look:
        return look
    kept: list[str] = []
    for char in look:
        if char == _DOT_ABOVE and _on_a_soft_dot(kept):
            continue
        kept.append(char)
    return "".join(kept)


def _on_a_soft_dot(before: list[str]) -> bool:
    """Whether a dot above after `before` sits on a soft-dotted letter's own dot: the letter,
    then only marks that are not above it (a dot below, say)."""
    for char in reversed(before):
        mark = unicodedata.combining(char)
        if not mark:
            return soft_dotted(char)
        if mark == _ABOVE:
            return False
    return False
