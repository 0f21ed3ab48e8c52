"""Asking a store for more only while the walk still wants more: the pages of scoped retrieval.

A store answers "the best n items for this query" (among those its filter lets through). The
packer reads items one at a time and stops one past its cut, so retrieval is driven from that
end: the first page is sized to what the budget is likely to take (`PageSize`), and only when
the walk has read every readable item of a page is the store asked again, for twice as many.
A reader whose items are rare in a shared store still gets a full budget of their own best
items; most requests cost one store call. An async store is read by the same walk (`awalk`).
"""

from __future__ import annotations

import asyncio
from asyncio import run_coroutine_threadsafe
from collections.abc import Callable, Coroutine, Hashable, Iterator, Sequence
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from contextvars import copy_context
from dataclasses import dataclass
from functools import partial
from math import ceil
from threading import Lock
from typing import Any, Generic, TypeVar

from aizk_integrations._scopes.directory import ScopeDirectory
from aizk_integrations._scopes.ids import read_by

Item = TypeVar("Item")
Walked = TypeVar("Walked")

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
    several_ids_in_one: int = 0
    """Items skipped because their scope ids are several written into one string, for the
    warning of a retrieval that returns items rather than packing them (`scope_check`)."""


def scope_check(
    reader: ScopeDirectory, fetched: Fetched, *, to_packer: bool
) -> Callable[[object], bool]:
    """The exact check of what a store returned, by what an item holds under the scopes key:
    the reader's items pass. An item whose scope ids are several written into one string
    (`read_by`) is no one's to read; it passes too when a packer reads what passes,
    which withholds it, counts it and names it as on any other path, and is otherwise counted
    in `fetched`, for the retriever to name."""

    ids = reader.scopes.keys()

    def check(scopes: object) -> bool:
        verdict = read_by(scopes, ids)
        if verdict is not None:
            return verdict
        if not to_packer:
            fetched.several_ids_in_one += 1
        return to_packer

    return check


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


async def awalk(
    walk: Callable[[Search[Item]], Walked],
    asearch: Callable[[int], Coroutine[Any, Any, Sequence[Item]]],
) -> Walked:
    """Run a synchronous walk once, each page it reads awaited from an async store.

    The walk (the pager, the packer reading it, its report) pulls pages while it reads and
    cannot await, so it runs in a thread, in the request's context, and each page it asks for
    is awaited on this event loop: the async path is the sync path itself, run once, asking the
    store for exactly the pages the sync path asks for. The thread is the walk's own, not the
    loop's default executor, where a store's async API often runs its sync one (LangChain's
    default): walks waiting there on pages that wait for a free thread would wait forever.
    Cancelling the call cancels the page being awaited, which ends the walk.
    """
    loop = asyncio.get_running_loop()
    pages = _LoopPages(asearch, loop)
    thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="aizk-walk")
    try:
        return await loop.run_in_executor(thread, partial(copy_context().run, walk, pages))
    except asyncio.CancelledError:
        pages.stop()
        raise
    finally:
        thread.shutdown(wait=False)


class _LoopPages(Generic[Item]):
    """A walk's search, called in its thread: each page awaited on the event loop, until the
    call the walk serves is cancelled."""

    def __init__(
        self,
        asearch: Callable[[int], Coroutine[Any, Any, Sequence[Item]]],
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self._asearch = asearch
        self._loop = loop
        self._lock = Lock()  # so no page is asked for once `stop` has cancelled the last one
        self._page: Future[Sequence[Item]] | None = None
        self._stopped = False

    def __call__(self, size: int) -> Sequence[Item]:
        with self._lock:
            if self._stopped:
                raise CancelledError
            page = self._page = run_coroutine_threadsafe(self._asearch(size), self._loop)
        return page.result()

    def stop(self) -> None:
        """End the walk: the page it waits for is cancelled, and no other is asked for."""
        with self._lock:
            self._stopped = True
            if self._page is not None:
                self._page.cancel()
