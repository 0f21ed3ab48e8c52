"""Asking a store for more only while the walk still wants more: the pages of scoped retrieval.

A store answers "the best n items for this query" (among those its filter lets through). The
packer reads items one at a time and stops one past its cut, so retrieval is driven from that
end: the first page is sized to what the budget is likely to take (`PageSize`), and only when
the walk has read every readable item of a page is the store asked again, for twice as many.
A reader whose items are rare in a shared store still gets a full budget of their own best
items; most requests cost one store call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from math import ceil
from typing import TypeVar

Item = TypeVar("Item")

Search = Callable[[int], Sequence[Item]]
"""The store's best `n` items for one request's query, as the pager asks for them."""


@dataclass
class Fetched:
    """What paging cost one request, and whether `most` ended it while the walk wanted more."""

    calls: int = 0
    returned: int = 0
    asked: int = 0
    """The most items one call asked for: the last page's size."""
    capped: bool = False
    """The pager was asked for more after a full page of `most` items: the store may hold
    readable items the request never saw."""


def readable_pages(
    search: Search[Item],
    readable: Callable[[Item], bool],
    identity: Callable[[Item], Hashable],
    *,
    first: int,
    most: int,
    fetched: Fetched | None = None,
) -> Iterator[Item]:
    """The readable items of the store's ranking, best first, fetched as the caller pulls them.

    `search(n)` is the store's best `n`; a page shorter than asked for means the store has no
    more. Each page is a longer prefix of the same ranking, so items already seen (by
    `identity`) are skipped, and every item is checked with `readable` before it is yielded,
    whatever the store's filter promised: the store's filter narrows what is fetched, this check
    decides what is returned. At most `most` items are asked for.
    """
    if first < 1 or most < 1:
        raise ValueError(f"a page holds at least one item: first={first}, most={most}")
    fetched = Fetched() if fetched is None else fetched
    seen: set[Hashable] = set()
    size = min(first, most)
    while True:
        page = search(size)
        fetched.asked = size
        fetched.calls += 1
        fetched.returned += len(page)
        for item in page:
            key = identity(item)
            if key in seen:
                continue
            seen.add(key)
            if readable(item):
                yield item
        if len(page) < size:
            return
        if size >= most:
            fetched.capped = True
            return
        size = min(2 * size, most)


class PageSize:
    """How many items to ask a store for first, so that most requests cost one store call.

    A budget holds as many items as their cost allows, which nothing knows before they are read;
    what the kept items of earlier requests cost is the best guess there is. So the first page
    is sized to the budget at the mean cost of the items kept so far, a quarter more for items
    that run long, plus the one past the cut that ends the walk. Only two counts are kept
    (tokens and items, never anything of an item), shared by every request of a retriever:
    a race between requests loses one request's counts at worst.
    """

    MARGIN = 1.25

    def __init__(self) -> None:
        self._seen = (0, 0)

    def first(self, budget: int, least: int) -> int:
        """The first page for a walk to `budget`: at least `least`, more once costs are known."""
        tokens, items = self._seen
        if not tokens:
            return least
        return max(least, ceil(budget * items / tokens * self.MARGIN) + 1)

    def learn(self, tokens_used: int, kept: int) -> None:
        """Count what a request's kept items cost."""
        tokens, items = self._seen
        self._seen = (tokens + tokens_used, items + kept)


class _PageNotFetchedError(Exception):
    """The walk asked for a page the async path has not fetched yet."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


async def fetched_pages(
    walk: Callable[[Search[Item]], object], asearch: Callable[[int], Awaitable[Sequence[Item]]]
) -> Search[Item]:
    """Fetch from an async store every page a synchronous walk reads, and answer from them.

    The walk (the pager, and the packer reading it) pulls pages while it reads and cannot
    await, so it is run over the pages fetched so far; when it asks for one not fetched yet it
    stops there, the page is awaited, and the walk runs again from the start. The search
    returned answers the walk from the fetched pages alone, so the caller's own walk over it
    (the one that reports) asks the store for nothing. Pages double, so a walk that needs p
    pages runs p + 1 times over pages already read; in exchange the async path is the sync walk
    itself, written once, asking the store for exactly the pages the sync path would.
    """
    pages: dict[int, Sequence[Item]] = {}

    def search(size: int) -> Sequence[Item]:
        if size not in pages:
            raise _PageNotFetchedError(size)
        return pages[size]

    while True:
        try:
            walk(search)
        except _PageNotFetchedError as needed:
            size = needed.size
        else:
            return search
        pages[size] = await asearch(size)  # outside the handler: its errors chain nothing
