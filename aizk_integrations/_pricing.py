"""What an item costs the budget: its evidence line (the seed's rule), or its piece of the block.

The walk is the same whichever a budget pays for; only the price of each item differs. A
pricing is called once per item in order, returns the item's cost for the cut table and the
running total with the item included, and gets a last word (`settle`) on what the walk kept.
"""

from __future__ import annotations

from math import ceil
from typing import Literal, Protocol

from aizk_integrations._rendering import (
    BOUNDARY,
    SCOPES_HEADER,
    item_piece,
    label_of,
    render,
    scope_line_piece,
    shared_scopes,
)
from aizk_integrations._rows import Row
from aizk_integrations._scopes import PRIVATE, Scope
from aizk_integrations._tokens import CharsPerToken, TokenCounter, count_tokens

BudgetCovers = Literal["lines", "block"]
"""What a budget pays for: `"lines"`, each evidence line plus its newline (the seed's rule), or
`"block"`, everything the rendered block holds, labels and headers included."""


class Pricing(Protocol):
    """How the walk prices items, one after another."""

    def __call__(self, row: Row) -> tuple[int, int]:
        """`(tokens, running)`: the row's cost as the cut table shows it, and the total so far."""
        ...

    def settle(self, kept: list[Row], tokens_used: int, budget: int) -> tuple[int, int]:
        """`(how many of kept stay, tokens they use)`, once the walk has stopped."""
        ...


def pricing_for(covers: BudgetCovers, counter: TokenCounter) -> Pricing:
    """A fresh pricing for one walk: pricings keep their running total, so never share one."""
    return BlockPricing(counter) if covers == "block" else LinesPricing(counter)


class LinesPricing:
    """The seed's rule: an item costs its text's tokens, plus one for the newline that joins it.

    The labels, header and boundary line around the items come on top, as in aizk itself.
    """

    def __init__(self, counter: TokenCounter) -> None:
        self._counter = counter
        self._trusted = type(counter) is CharsPerToken  # ours: always a valid count
        self._running = 0

    def __call__(self, row: Row) -> tuple[int, int]:
        if self._trusted:
            tokens = self._counter(row.text)
        else:
            tokens = count_tokens(self._counter, row.text, row.position)
        self._running += tokens + 1
        return tokens, self._running

    def settle(self, kept: list[Row], tokens_used: int, budget: int) -> tuple[int, int]:
        """The sum of the kept lines is exact: nothing to settle."""
        return len(kept), tokens_used


class BlockPricing:
    """An item costs what keeping it adds to the rendered block, so the whole block fits.

    The block is a fixed frame (boundary line and heading), one piece per item and, while some
    organization's scope is involved, a header with one line per such scope: keeping an item
    can add header lines too. The pieces are the template's own (`_rendering`), so the price is
    the layout's, not a copy of it.

    With the character heuristic the running total is the block's exact cost, because the
    pieces add up to the rendering character for character; characters are summed and turned
    into tokens once per step, since `ceil` is not additive. A real tokenizer is not additive
    either (the same text split in two can count differently), so its running total is an
    estimate, and `settle` counts the finished block once more and drops items from the tail
    in the rare case it is over.
    """

    def __init__(self, counter: TokenCounter) -> None:
        self._counter = counter
        self._chars_per_token = counter.chars_per_token if type(counter) is CharsPerToken else None
        self._started = False
        self._units = 0  # characters under the heuristic, else tokens
        self._running = 0
        self._header: dict[str, tuple[Scope, int]] = {}  # name -> the scope shown, its cost
        self._in_header: tuple[Scope, ...] | None = None  # the scope tuple last taken in
        self._labelled: tuple[Scope, ...] | None = None  # ... and last labelled, with its label
        self._label = ""

    def _measure(self, text: str, row: Row) -> int:
        if self._chars_per_token is not None:
            return len(text)
        return count_tokens(self._counter, text, row.position)

    def __call__(self, row: Row) -> tuple[int, int]:
        measure = self._measure
        added = 0
        if not self._started:
            self._started = True
            added += measure(BOUNDARY, row)
        if row.scopes is not self._in_header:  # taking in the same tuple twice changes nothing
            self._in_header = row.scopes
            added += self._header_growth(row)
        if row.scopes is not self._labelled:
            self._labelled, self._label = row.scopes, label_of(row.scopes)
        added += measure(item_piece(row, self._label), row)
        self._units += added
        total = (
            self._units
            if self._chars_per_token is None
            else ceil(self._units / self._chars_per_token)
        )
        tokens, self._running = total - self._running, total
        return tokens, total

    def _header_growth(self, row: Row) -> int:
        """What the `## Scopes` header grows by when it takes in this row's scopes.

        The header shows the last scope seen under a name, as `shared_scopes` does.
        """
        added = 0
        for scope in row.scopes:
            previous = self._header.get(scope.name)
            if scope.name == PRIVATE or (previous is not None and previous[0] is scope):
                continue
            if not self._header:
                added += self._measure(SCOPES_HEADER, row)
            cost = self._measure(scope_line_piece(scope), row)
            added += cost - (previous[1] if previous is not None else 0)
            self._header[scope.name] = (scope, cost)
        return added

    def settle(self, kept: list[Row], tokens_used: int, budget: int) -> tuple[int, int]:
        """With a real tokenizer, count the block as rendered: the number the promise is about."""
        if self._chars_per_token is not None or not kept:
            return len(kept), tokens_used
        count = len(kept)
        exact = self._exact(kept)
        while exact > budget:
            count -= 1
            exact = self._exact(kept[:count])  # no rows render as "", which counts 0
        return count, exact

    def _exact(self, kept: list[Row]) -> int:
        return count_tokens(self._counter, render(kept, shared_scopes(kept)), None)
