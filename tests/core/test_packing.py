"""The packing walk: a strict prefix cut with one token per joining newline."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import count

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aizk_integrations import Candidate, EvidenceError, Lane, explain, pack


def line_of(tokens: int) -> str:
    """A line the heuristic counts as exactly `tokens` tokens."""
    return "x" * (4 * tokens)


def prefix_oracle(token_counts: list[int], budget: int) -> int:
    """How many items the seed keeps, written from the table rather than from pack's code."""
    kept, spent = 0, 0
    while kept < len(token_counts):
        spent += token_counts[kept] + 1
        if spent > budget:
            break
        kept += 1
    return kept


token_lists = st.lists(st.integers(min_value=0, max_value=300), max_size=40)
budgets = st.integers(min_value=0, max_value=5000)


@given(token_lists, budgets)
def test_pack_keeps_exactly_the_prefix_the_oracle_keeps(tokens: list[int], budget: int) -> None:
    candidates = [Candidate(line=line_of(n)) for n in tokens]
    assert pack(candidates, budget) == candidates[: prefix_oracle(tokens, budget)]


@given(token_lists, budgets)
def test_kept_cost_never_exceeds_the_budget(tokens: list[int], budget: int) -> None:
    kept = pack([Candidate(line=line_of(n)) for n in tokens], budget)
    assert sum(c.token_count + 1 for c in kept) <= budget


@given(st.lists(st.text(max_size=60), max_size=30), budgets)
def test_kept_is_always_a_prefix_and_the_next_item_did_not_fit(
    lines: list[str], budget: int
) -> None:
    candidates = [Candidate(line=line) for line in lines]
    kept = pack(candidates, budget)
    assert kept == candidates[: len(kept)]
    if len(kept) < len(candidates):
        spent = sum(c.token_count + 1 for c in candidates[: len(kept) + 1])
        assert spent > budget


@given(st.lists(st.integers(min_value=0, max_value=50), max_size=30), budgets)
def test_a_custom_counter_replaces_the_heuristic(lengths: list[int], budget: int) -> None:
    candidates = [Candidate(line="y" * n) for n in lengths]
    kept = pack(candidates, budget, token_counter=len)
    assert len(kept) == prefix_oracle(lengths, budget)


def test_the_seed_table_keeps_the_first_three_and_drops_the_cheap_fifth() -> None:
    candidates = [Candidate(line=line_of(n)) for n in (612, 430, 880, 190, 40)]
    rows = [line.split() for line in explain(candidates, 2048).splitlines()[2:]]
    assert [int(row[3]) for row in rows] == [613, 1044, 1925, 2116, 2157]
    assert [" ".join(row[4:]) for row in rows] == [
        "keep",
        "keep",
        "keep",
        "drop, over budget",
        "drop, after the cut",
    ]
    assert pack(candidates, 2048) == candidates[:3]


def test_the_cut_table_reads_like_the_seed() -> None:
    candidates = [Candidate(line=line_of(n)) for n in (612, 430, 880, 190, 40)]
    assert explain(candidates, 2048) == "\n".join(
        [
            "  rank  lane            tokens  running  budget 2048",
            "  ----  --------------  ------  -------  -----------",
            "     1  sources            612      613  keep",
            "     2  sources            430     1044  keep",
            "     3  sources            880     1925  keep",
            "     4  sources            190     2116  drop, over budget",
            "     5  sources             40     2157  drop, after the cut",
        ]
    )


def test_each_item_pays_one_token_for_its_joining_newline() -> None:
    candidates = [Candidate(line=line_of(1))] * 3
    assert len(pack(candidates, 6)) == 3
    assert len(pack(candidates, 5)) == 2


def test_token_count_rounds_characters_over_four_up() -> None:
    assert [Candidate(line="x" * n).token_count for n in (0, 1, 4, 5, 8, 9)] == [0, 1, 1, 2, 2, 3]


def test_a_zero_budget_keeps_nothing() -> None:
    assert pack([Candidate(line="")], 0) == []


def test_pack_pulls_at_most_one_item_past_the_cut() -> None:
    pulled = count()

    def endless() -> Iterator[Candidate]:
        for _ in range(100_000):
            next(pulled)
            yield Candidate(line=line_of(10))

    kept = pack(endless(), 2048)
    assert len(kept) == 186  # 186 * 11 = 2046; the 187th costs 2057
    assert next(pulled) == 187


@pytest.mark.parametrize("budget", [True, False, 10.0, "10", None])
def test_a_budget_that_is_not_an_int_is_a_type_error(budget: object) -> None:
    with pytest.raises(TypeError, match=r"^budget must be an int >= 0, not \w+ "):
        pack([], budget)  # type: ignore[arg-type]


def test_a_negative_budget_is_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"^budget must be an int >= 0, got -1$"):
        pack([], -1)


@pytest.mark.parametrize(
    ("counter", "message"),
    [
        (lambda text: -1, "candidate 2: token_counter must return a non-negative int, got -1"),
        (lambda text: 1.5, "candidate 2: token_counter must return a non-negative int, got 1.5"),
        (lambda text: None, "candidate 2: token_counter must return a non-negative int, got None"),
        (lambda text: True, "candidate 2: token_counter must return a non-negative int, got True"),
        (lambda text: 1 // 0, "candidate 2: token_counter raised ZeroDivisionError"),
    ],
)
def test_a_counter_that_misbehaves_is_stopped_at_the_item(counter: object, message: str) -> None:
    calls = count()

    def first_fine(text: str) -> object:
        return 1 if next(calls) == 0 else counter(text)  # type: ignore[operator]

    with pytest.raises(EvidenceError, match=message.replace("(", r"\(").replace(")", r"\)")):
        pack([Candidate(line="a"), Candidate(line="b")], 100, token_counter=first_fine)  # type: ignore[arg-type]


def test_a_counters_own_error_is_quoted_cut_short_like_every_quoted_value() -> None:
    def loud(text: str) -> int:
        raise ValueError("x" * 10_000)

    with pytest.raises(EvidenceError) as raised:
        pack([Candidate(line="a")], 100, token_counter=loud)
    quoted = repr("x" * 80) + "... (10000 characters)"
    assert str(raised.value) == "candidate 1: token_counter raised ValueError: " + quoted


def test_the_walk_records_every_lane_in_the_debug_view_only() -> None:
    table = explain([Candidate(lane=Lane.PROFILE, line="p")], 10)
    assert "profile" in table


def test_explain_reads_every_candidate_and_counts_with_the_callers_counter() -> None:
    candidates = [Candidate(line="one two three"), Candidate(line="four")]
    table = explain(candidates, 3, token_counter=lambda text: len(text.split()))
    assert table.splitlines()[2:] == [
        "     1  sources              3        4  drop, over budget",
        "     2  sources              1        6  drop, after the cut",
    ]


def test_explain_names_the_candidate_a_counter_fails_on() -> None:
    with pytest.raises(EvidenceError, match=r"^candidate 1: token_counter must return"):
        explain([Candidate(line="x")], 10, token_counter=lambda text: -1)


def test_pack_keeps_the_callers_own_candidate_objects() -> None:
    candidates = [Candidate(line="a"), Candidate(line="a")]
    kept = pack(candidates, 100)
    assert [id(candidate) for candidate in kept] == [id(candidate) for candidate in candidates]
