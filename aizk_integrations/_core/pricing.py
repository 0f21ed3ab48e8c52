"""What an item costs the budget: its evidence line (the seed's rule), or its piece of the block.

The walk is the same whichever a budget pays for; only the price of each item differs. A
pricing is called once per item in order, returns the item's cost for the cut table and the
running total with the item included, and gets a last word (`settle`) on what the walk kept.
"""

from __future__ import annotations

from math import ceil
from typing import Literal, Protocol

from aizk_integrations._core.evidence import Evidence
from aizk_integrations._core.rendering import header_order, piece, render, take_in
from aizk_integrations._scopes.directory import Scope
from aizk_integrations._tokens import CharsPerToken, TokenCounter, count_tokens

BudgetCovers = Literal["lines", "block"]
"""What a budget pays for: `"lines"`, each evidence line plus its newline (the seed's rule), or
`"block"`, everything the rendered block holds, labels and headers included."""


class Pricing(Protocol):
    """How the walk prices items, one after another."""

    def __call__(self, evidence: Evidence, position: int) -> tuple[int, int]:
        """`(tokens, running)`: the item's cost as the cut table shows it, and the total so far."""
        ...

    def settle(self, kept: list[Evidence], tokens_used: int, budget: int) -> tuple[int, int]:
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
        self._running = 0

    def __call__(self, evidence: Evidence, position: int) -> tuple[int, int]:
        tokens = count_tokens(self._counter, evidence.text, position)
        self._running += tokens + 1
        return tokens, self._running

    def settle(self, kept: list[Evidence], tokens_used: int, budget: int) -> tuple[int, int]:
        """The sum of the kept lines is exact: nothing to settle."""
        return len(kept), tokens_used


class BlockPricing:
    """An item costs what keeping it adds to the rendered block, so the whole block fits.

    The block is the template's pieces: the boundary line and heading, a `## Scopes` header
    while some organization's scope is involved (keeping an item can grow it), and one piece per
    item. The pieces are the template's own macros, so the price is the layout's, not a copy.

    With the character heuristic the running total is the block's exact cost, because the
    pieces add up to the rendering character for character; characters are summed and turned
    into tokens once per step, since `ceil` is not additive. A real tokenizer is not additive
    either (the same text split in two can count differently), so its running total is an
    estimate, and `settle` counts the finished block and drops items from the tail in the rare
    case it is over.
    """

    def __init__(self, counter: TokenCounter) -> None:
        self._counter = counter
        self._chars_per_token = counter.chars_per_token if type(counter) is CharsPerToken else None
        self._header: dict[str, Scope] = {}
        self._frame: int | None = None  # the boundary line and heading
        self._header_cost = 0
        self._items_cost = 0
        self._priced = 0  # items priced so far: a cited item's number is its place
        self._running = 0

    def _measure(self, text: str, position: int) -> int:
        """Characters under the heuristic, else tokens."""
        if self._chars_per_token is not None:
            return len(text)
        return count_tokens(self._counter, text, position)

    def __call__(self, evidence: Evidence, position: int) -> tuple[int, int]:
        if self._frame is None:
            self._frame = self._measure(piece("boundary"), position)
        if take_in(self._header, evidence):
            header = piece("scopes_header", scopes=header_order(self._header))
            self._header_cost = self._measure(header, position)
        self._items_cost += self._measure(piece("items", [evidence], after=self._priced), position)
        self._priced += 1
        units = self._frame + self._header_cost + self._items_cost
        total = units if self._chars_per_token is None else ceil(units / self._chars_per_token)
        tokens, self._running = total - self._running, total
        return tokens, total

    def settle(self, kept: list[Evidence], tokens_used: int, budget: int) -> tuple[int, int]:
        """With a real tokenizer, count the block as rendered: the number the promise is about.

        The longest prefix whose block counts within the budget stays. Nothing kept is no block
        at all, which costs nothing whatever a counter says of `""`.
        """
        if self._chars_per_token is not None:
            return len(kept), tokens_used
        for count in range(len(kept), 0, -1):
            exact = count_tokens(self._counter, render(kept[:count]), None)
            if exact <= budget:
                return count, exact
        return 0, 0
