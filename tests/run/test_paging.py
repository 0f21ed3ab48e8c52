"""The pager on its own, over a ranking held in a list: what it asks the store for, what it
yields, and what it reports, so each rule of `_paging` is pinned without a vector store."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aizk_integrations._run.paging import (
    Fetched,
    PageSize,
    _PageNotFetchedError,
    fetched_pages,
    readable_pages,
)


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


def test_the_async_pages_are_the_pages_the_sync_walk_asks_for() -> None:
    ranking = Ranking(range(40))
    awaited: list[int] = []

    async def asearch(size: int) -> list[int]:
        awaited.append(size)
        return ranking.items[:size]

    def walk(search: Callable[[int], Sequence[int]]) -> list[int]:
        return list(readable_pages(search, even, lambda item: item, first=3, most=30))

    search = asyncio.run(fetched_pages(walk, asearch))
    assert awaited == [3, 6, 12, 24, 30]
    sync = Ranking(range(40))
    assert pages(sync, first=3, most=30) == walk(search)
    assert sync.asked == awaited


def test_the_search_fetched_pages_returns_refuses_a_page_it_did_not_fetch() -> None:
    async def asearch(size: int) -> list[int]:
        return list(range(size))

    search = asyncio.run(fetched_pages(lambda search: search(2), asearch))
    assert search(2) == [0, 1]
    with pytest.raises(_PageNotFetchedError) as raised:
        search(4)
    assert raised.value.size == 4
