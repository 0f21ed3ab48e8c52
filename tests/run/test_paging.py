"""The pager on its own, over a ranking held in a list: what it asks the store for, what it
yields, and what it reports, so each rule of `_paging` is pinned without a vector store."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError, ThreadPoolExecutor
from contextvars import ContextVar
from threading import Event

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aizk_integrations._run.paging import Fetched, PageSize, awalk, readable_pages


class Ranking:
    """A store's ranking of `items`, recording the size of every page asked for."""

    def __init__(self, items: Sequence[int]) -> None:
        self.items = list(items)
        self.asked: list[int] = []

    def __call__(self, size: int) -> list[int]:
        self.asked.append(size)
        return self.items[:size]


def even(item: int) -> bool:
    return item % 2 == 0


def pages(ranking: Ranking, first: int, most: int, fetched: Fetched | None = None) -> list[int]:
    return list(
        readable_pages(ranking, even, lambda item: item, first=first, most=most, fetched=fetched)
    )


def test_the_readable_items_come_in_the_rankings_order_with_pages_doubling() -> None:
    ranking = Ranking(range(100))
    fetched = Fetched()
    assert pages(ranking, first=3, most=1000, fetched=fetched) == list(range(0, 100, 2))
    assert ranking.asked == [3, 6, 12, 24, 48, 96, 192]
    assert fetched == Fetched(calls=7, returned=3 + 6 + 12 + 24 + 48 + 96 + 100, asked=192)


def test_a_short_page_ends_the_paging_uncapped() -> None:
    ranking = Ranking(range(5))
    fetched = Fetched()
    assert pages(ranking, first=8, most=8, fetched=fetched) == [0, 2, 4]
    assert ranking.asked == [8]
    assert not fetched.capped


def test_a_full_page_of_most_items_ends_the_paging_capped() -> None:
    ranking = Ranking(range(100))
    fetched = Fetched()
    assert pages(ranking, first=2, most=5, fetched=fetched) == [0, 2, 4]
    assert ranking.asked == [2, 4, 5]
    assert fetched.capped
    assert fetched.asked == 5


def test_an_exactly_full_last_page_below_most_asks_once_more() -> None:
    ranking = Ranking(range(4))
    fetched = Fetched()
    assert pages(ranking, first=4, most=100, fetched=fetched) == [0, 2]
    assert ranking.asked == [4, 8]
    assert not fetched.capped


def test_the_first_page_never_exceeds_most() -> None:
    ranking = Ranking(range(100))
    pages(ranking, first=50, most=10)
    assert ranking.asked == [10]


def test_the_store_is_asked_only_as_far_as_the_caller_reads() -> None:
    ranking = Ranking(range(100))
    walk = readable_pages(ranking, even, lambda item: item, first=2, most=100)
    assert [next(walk), next(walk)] == [0, 2]
    assert ranking.asked == [2, 4]


def test_an_item_seen_on_an_earlier_page_is_yielded_once() -> None:
    assert pages(Ranking([0, 2, 2, 4, 0, 6]), first=2, most=100) == [0, 2, 4, 6]


@pytest.mark.parametrize(("first", "most"), [(0, 10), (10, 0), (-1, 10), (0, 0)])
def test_a_page_of_no_items_is_refused_rather_than_asked_for_forever(first: int, most: int) -> None:
    with pytest.raises(ValueError, match=f"at least one item: first={first}, most={most}"):
        pages(Ranking(range(10)), first=first, most=most)


@given(st.lists(st.integers(0, 50)), st.integers(1, 20), st.integers(1, 60))
def test_paging_yields_the_readable_distinct_prefix_of_what_most_allows(
    items: list[int], first: int, most: int
) -> None:
    ranking = Ranking(items)
    fetched = Fetched()
    expected = list(dict.fromkeys(item for item in items[:most] if even(item)))
    assert pages(ranking, first=first, most=most, fetched=fetched) == expected
    assert max(ranking.asked) <= most
    assert fetched.calls == len(ranking.asked)
    assert fetched.capped == (len(items) >= most and max(ranking.asked) == most)


def test_a_page_size_knows_nothing_before_a_request_is_counted() -> None:
    assert PageSize().first(budget=2048, least=4) == 4


def test_the_first_page_holds_the_budget_at_the_mean_kept_cost_a_quarter_more_and_one() -> None:
    size = PageSize()
    size.learn(tokens_used=1000, kept=10)  # 100 tokens an item
    assert size.first(budget=2048, least=4) == 27  # ceil(20.48 * 1.25) + 1
    size.learn(tokens_used=1000, kept=30)  # 50 tokens an item, over both requests
    assert size.first(budget=2048, least=4) == 53  # ceil(40.96 * 1.25) + 1
    assert size.first(budget=2048, least=100) == 100


def test_a_request_that_kept_nothing_leaves_the_estimate_unknown() -> None:
    size = PageSize()
    size.learn(tokens_used=0, kept=0)
    assert size.first(budget=2048, least=4) == 4


def test_the_async_walk_runs_once_asking_the_store_for_the_pages_the_sync_walk_asks() -> None:
    ranking = Ranking(range(40))
    awaited: list[int] = []
    walks: list[int] = []

    async def asearch(size: int) -> list[int]:
        awaited.append(size)
        return ranking.items[:size]

    def walk(search: Callable[[int], Sequence[int]]) -> list[int]:
        walks.append(1)
        return list(readable_pages(search, even, lambda item: item, first=3, most=30))

    found = asyncio.run(awalk(walk, asearch))
    assert walks == [1]
    assert awaited == [3, 6, 12, 24, 30]
    sync = Ranking(range(40))
    assert pages(sync, first=3, most=30) == found
    assert sync.asked == awaited


def test_the_async_walk_runs_in_the_requests_context() -> None:
    request: ContextVar[str] = ContextVar("request", default="none")

    async def asearch(size: int) -> list[str]:
        return [request.get()] * size

    async def call() -> tuple[str, Sequence[str]]:
        request.set("this one")
        return await awalk(lambda search: (request.get(), search(1)), asearch)

    assert asyncio.run(call()) == ("this one", ["this one"])


def test_an_error_of_the_async_store_reaches_the_caller_as_it_was_raised() -> None:
    failure = ConnectionError("the store is down")

    async def asearch(size: int) -> list[int]:
        raise failure

    with pytest.raises(ConnectionError) as raised:
        asyncio.run(awalk(lambda search: search(2), asearch))
    assert raised.value is failure
    assert raised.value.__cause__ is None
    assert raised.value.__context__ is None


def test_cancelling_the_async_walk_cancels_the_page_it_waits_for_and_ends_the_walk() -> None:
    asked: list[int] = []
    cancelled: list[int] = []
    ended: list[BaseException] = []
    walk_ended = Event()

    async def asearch(size: int) -> list[int]:
        asked.append(size)
        try:
            await asyncio.Event().wait()  # a store that never answers
        except asyncio.CancelledError:
            cancelled.append(size)
            raise
        return []

    def walk(search: Callable[[int], Sequence[int]]) -> None:
        try:
            search(2)
            search(4)
        except BaseException as error:
            ended.append(error)
            raise
        finally:
            walk_ended.set()

    async def call() -> None:
        task = asyncio.create_task(awalk(walk, asearch))
        while not asked:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # Before the loop ends (a server's runs on): closing it would cancel the page anyway.
        assert await asyncio.to_thread(walk_ended.wait, 10)

    asyncio.run(call())
    assert asked == cancelled == [2]
    assert [type(error) for error in ended] == [CancelledError]


def test_walks_never_wait_for_threads_their_own_pages_wait_for() -> None:
    # A store's async API that runs its sync one on the loop's default executor (LangChain's
    # default): with walks on that executor too, two walks would hold its one thread.
    async def asearch(size: int) -> list[int]:
        return await asyncio.get_running_loop().run_in_executor(None, list, range(size))

    def walk(search: Callable[[int], Sequence[int]]) -> list[int]:
        return list(readable_pages(search, even, lambda item: item, first=2, most=8))

    async def calls() -> list[list[int]]:
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(max_workers=1))
        walks = asyncio.gather(*(awalk(walk, asearch) for _ in range(4)))
        return await asyncio.wait_for(walks, timeout=10)

    assert asyncio.run(calls()) == [[0, 2, 4, 6]] * 4
