"""Asking a store for more only while the walk still wants more: the pages of scoped retrieval.

A store answers "the best n items for this query" (among those its filter lets through). The
packer reads items one at a time and stops one past its cut, so retrieval is driven from that
end: the first page is small, and only when the walk has read every readable item of a page is
the store asked again, for twice as many. A reader whose items are rare in a shared store still
gets a full budget of their own best items; a reader whose first page fills the budget costs one
store call.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

Item = TypeVar("Item")


@dataclass
class Fetched:
    """What paging cost one request: store calls, and the items the store returned in all."""

    calls: int = 0
    returned: int = 0


def readable_pages(
    search: Callable[[int], Sequence[Item]],
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
    seen: set[Hashable] = set()
    size = min(first, most)
    while size > 0:
        page = search(size)
        if fetched is not None:
            fetched.calls += 1
            fetched.returned += len(page)
        for item in page:
            key = identity(item)
            if key in seen:
                continue
            seen.add(key)
            if readable(item):
                yield item
        if len(page) < size or size >= most:
            return
        size = min(2 * size, most)
