"""The one exception callers catch for bad evidence input, and how errors name what went wrong.

An error about one item is raised deep inside the walk, where only its position is known; the
caller's boundary (`pack`, an adapter) knows what to call it ("candidate 2", a document's id, a
node's id) and names it there, once.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager

QUOTE_LIMIT = 80
"""Characters of a value an error message quotes before cutting it short."""


class EvidenceError(ValueError):
    """An evidence item, a setting or a counter result that the packer cannot accept.

    It subclasses `ValueError` so existing `except ValueError` handlers keep working; the message
    always names the item (position or id), the field, and what is allowed.
    """


class ItemError(EvidenceError):
    """What is wrong with the item at `position`, before anyone has said what that item is called.

    `position` is the item's index in what the caller passed, or `None` for the rendered block
    as a whole. An item found wrong before it was authorized (its scopes unreadable) may be
    another reader's, so it is `authorized=False` and named by its position alone.
    """

    def __init__(self, position: int | None, problem: str, *, authorized: bool = True) -> None:
        super().__init__(problem)
        self.position = position
        self.problem = problem
        self.authorized = authorized


ItemName = Callable[[int, bool], str]
"""How a boundary names the item at a position; the flag says whether it may show the item's id."""


@contextmanager
def naming_items(name: ItemName) -> Iterator[None]:
    """Turn an `ItemError` raised inside into an `EvidenceError` that starts with the item's name.

    The cause (a counter's own exception, say) stays chained, so a traceback still shows it.
    """
    try:
        yield
    except ItemError as error:
        if error.position is None:
            who = "the rendered block"
        else:
            who = name(error.position, error.authorized)
        raise EvidenceError(f"{who}: {error.problem}") from error.__cause__


def quoted(value: object) -> str:
    """`repr(value)`, cut to a short prefix with its length noted when it is long.

    Errors end up in logs and tracebacks; a 5 MB metadata value must not make a 5 MB message.
    """
    if isinstance(value, str) and len(value) > QUOTE_LIMIT:
        return f"{value[:QUOTE_LIMIT]!r}... ({len(value)} characters)"
    text = _short.repr(value)  # bounded however large or deep the value is
    return text if len(text) <= QUOTE_LIMIT else f"{text[:QUOTE_LIMIT]}..."


_short = reprlib.Repr()
_short.maxstring = _short.maxother = QUOTE_LIMIT
