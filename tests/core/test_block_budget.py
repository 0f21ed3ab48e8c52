"""Whole-block budgets: the rendered block, labels and headers included, fits the budget."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import count
from math import ceil
from typing import get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aizk_integrations import (
    Candidate,
    EvidenceError,
    Lane,
    RecallResult,
    Scope,
    ScopeDirectory,
    pack,
    pack_block,
)
from aizk_integrations._core.pricing import BudgetCovers
from aizk_integrations._tokens import TokenCounter
from tests.offline_tokenizers import bpe_counter, cl100k_counter

READER = "me"
ORGS = ("org-a", "org-b", "org-c")

# Scope names include a backtick, a line break, a name shared by two ids and an org that calls
# itself "privately", so the header's code spans, folding and de-duplication are all exercised.
scope_names = st.sampled_from(["team", "book-club", "a`b", "x y", "privately", "team"])
descriptions = st.sampled_from(["", "The team", "Book club\r\nKawasaki"])
directories = st.one_of(
    st.none(),
    st.builds(
        lambda names, descriptions: ScopeDirectory.for_caller(
            READER,
            {
                org: Scope(name=name, description=description)
                for org, name, description in zip(ORGS, names, descriptions, strict=True)
            },
        ),
        st.lists(scope_names, min_size=3, max_size=3),
        st.lists(descriptions, min_size=3, max_size=3),
    ),
)
uuids = st.one_of(st.none(), st.uuids())
texts = st.text(st.characters(codec="utf-8"), max_size=80) | st.sampled_from(
    ["", "\n", "line\n\nafter a blank\n", "## heading\n> quote", "<|endoftext|> `code`"]
)
candidates = st.builds(
    Candidate,
    lane=st.sampled_from(Lane),
    line=texts,
    scopes=st.sets(st.sampled_from((READER, *ORGS))),
    artifact_id=uuids,
    artifact_content_id=uuids,
)
candidate_lists = st.lists(candidates, max_size=12)
budgets = st.integers(min_value=0, max_value=700)


def heuristic(text: str) -> int:
    """The seed's count, written out rather than taken from the package."""
    return ceil(len(text) / 4)


def authorized(items: list[Candidate], directory: ScopeDirectory | None) -> list[Candidate]:
    """What reaches packing: everything without a directory, the readable rows with one."""
    if directory is None:
        return items
    return [item for item in items if directory.permits(item.scopes)]


def rendered_tokens(
    items: list[Candidate], directory: ScopeDirectory | None, counter: TokenCounter
) -> int:
    return counter(RecallResult.from_candidates(items, directory).to_markdown())


REAL_COUNTERS = {"cl100k": cl100k_counter(), "trained BPE": bpe_counter()}
ALL_COUNTERS = {"heuristic": heuristic, **REAL_COUNTERS}

# Rendering and tokenizing a dozen items takes milliseconds; a busy CI runner must not turn
# that into a flaky deadline failure.
unhurried = settings(deadline=None)


@pytest.mark.parametrize("counter", ALL_COUNTERS.values(), ids=ALL_COUNTERS.keys())
@unhurried
@given(items=candidate_lists, reader=directories, budget=budgets)
def test_the_whole_rendered_block_fits_the_budget_and_is_a_prefix_in_merit_order(
    counter: TokenCounter, items: list[Candidate], directory: ScopeDirectory | None, budget: int
) -> None:
    shown = authorized(items, directory)
    passed = None if counter is heuristic else counter
    result = pack_block(shown, budget, directory, token_counter=passed)
    assert counter(result.to_markdown()) <= budget
    kept = len(result.evidence)
    assert result == RecallResult.from_candidates(shown[:kept], directory)


@given(items=candidate_lists, reader=directories, budget=budgets)
def test_with_the_heuristic_the_block_keeps_the_longest_prefix_whose_rendering_fits(
    items: list[Candidate], directory: ScopeDirectory | None, budget: int
) -> None:
    shown = authorized(items, directory)
    longest = 0
    while longest < len(shown) and (
        rendered_tokens(shown[: longest + 1], directory, heuristic) <= budget
    ):
        longest += 1
    assert len(pack_block(shown, budget, directory).evidence) == longest


@given(items=candidate_lists, reader=directories)
def test_the_walk_prices_the_block_character_for_character_as_the_template_renders_it(
    items: list[Candidate], directory: ScopeDirectory | None
) -> None:
    # One token per character: the walk's price of each prefix must be its rendering's length.
    shown = authorized(items, directory)
    for end in range(1, len(shown) + 1):
        prefix = shown[:end]
        length = len(RecallResult.from_candidates(prefix, directory).to_markdown())
        assert len(pack_block(prefix, length, directory, token_counter=len).evidence) == end
        assert len(pack_block(prefix, length - 1, directory, token_counter=len).evidence) < end


@pytest.mark.parametrize("counter", ALL_COUNTERS.values(), ids=ALL_COUNTERS.keys())
@unhurried
@given(items=candidate_lists, reader=directories, budget=budgets)
def test_the_block_never_keeps_more_items_than_the_lines_rule_at_the_same_budget(
    counter: TokenCounter, items: list[Candidate], directory: ScopeDirectory | None, budget: int
) -> None:
    shown = authorized(items, directory)
    by_block = pack_block(shown, budget, directory, token_counter=counter)
    assert len(by_block.evidence) <= len(pack(shown, budget, token_counter=counter))


@pytest.mark.parametrize("counter", ALL_COUNTERS.values(), ids=ALL_COUNTERS.keys())
@unhurried
@given(items=candidate_lists, reader=directories)
def test_a_budget_as_large_as_the_whole_block_keeps_everything(
    counter: TokenCounter, items: list[Candidate], directory: ScopeDirectory | None
) -> None:
    shown = authorized(items, directory)
    assert len(pack_block(shown, 10**9, directory, token_counter=counter).evidence) == len(shown)


@given(items=candidate_lists, reader=directories)
def test_with_the_heuristic_a_budget_of_exactly_the_blocks_count_keeps_everything(
    items: list[Candidate], directory: ScopeDirectory | None
) -> None:
    shown = authorized(items, directory)
    exact = rendered_tokens(shown, directory, heuristic)
    assert len(pack_block(shown, exact, directory).evidence) == len(shown)
    if shown:
        assert len(pack_block(shown, exact - 1, directory).evidence) < len(shown)


def superadditive(text: str) -> int:
    """A counter that charges a whole more than its parts, so the walk's estimate runs short."""
    return len(text) ** 2 // 256


@unhurried
@given(items=candidate_lists, reader=directories, budget=st.integers(0, 20_000))
def test_a_counter_that_is_not_additive_still_gets_a_block_within_budget(
    items: list[Candidate], directory: ScopeDirectory | None, budget: int
) -> None:
    shown = authorized(items, directory)
    result = pack_block(shown, budget, directory, token_counter=superadditive)
    assert superadditive(result.to_markdown()) <= budget
    assert result == RecallResult.from_candidates(shown[: len(result.evidence)], directory)


def test_when_the_exact_count_is_over_items_are_dropped_from_the_tail() -> None:
    items = [Candidate(line="x" * 40) for _ in range(3)]
    whole = superadditive(RecallResult.from_candidates(items).to_markdown())
    # Priced piece by piece, all three fit a budget of whole - 1; the block as rendered does not.
    result = pack_block(items, whole - 1, token_counter=superadditive)
    assert result == RecallResult.from_candidates(items[:2])


def test_the_seed_example_overflows_a_lines_budget_but_not_a_block_budget(
    seed_candidates: list[Candidate], seed_directory: ScopeDirectory
) -> None:
    lines_cost = sum(candidate.token_count + 1 for candidate in seed_candidates)
    assert lines_cost == 66
    lines_result = RecallResult.from_candidates(pack(seed_candidates, 66), seed_directory)
    assert len(lines_result.evidence) == 3
    assert heuristic(lines_result.to_markdown()) == 164  # what the prompt gets from "66"
    assert pack_block(seed_candidates, 66, seed_directory).evidence == ()
    assert len(pack_block(seed_candidates, 106, seed_directory).evidence) == 1
    assert len(pack_block(seed_candidates, 163, seed_directory).evidence) == 2
    assert pack_block(seed_candidates, 164, seed_directory) == lines_result


def test_an_empty_result_costs_nothing_and_fits_a_zero_budget(
    seed_candidates: list[Candidate], seed_directory: ScopeDirectory
) -> None:
    assert pack_block(seed_candidates, 0, seed_directory) == RecallResult()
    assert pack_block([], 0) == RecallResult()


def test_the_block_reads_at_most_one_item_past_the_cut() -> None:
    pulled = 0

    def endless() -> Iterator[Candidate]:
        nonlocal pulled
        for _ in count():
            pulled += 1
            yield Candidate(line="y" * 40)

    kept = len(pack_block(endless(), 200).evidence)
    assert 0 < kept < pulled
    assert pulled == kept + 1


def test_a_candidate_the_reader_may_not_see_is_an_error_not_a_silent_label() -> None:
    directory = ScopeDirectory.for_caller(READER, {})
    with pytest.raises(ValueError, match="not in this reader's directory"):
        pack_block([Candidate(line="secret", scopes=["someone-else"])], 100, directory)


@pytest.mark.parametrize(
    ("budget", "error"),
    [(-1, ValueError), (True, TypeError), (2.0, TypeError), ("100", TypeError)],
)
def test_a_budget_that_is_not_an_int_of_at_least_zero_is_refused(
    budget: object, error: type[Exception]
) -> None:
    with pytest.raises(error, match="budget must be an int >= 0"):
        pack_block([], budget)  # type: ignore[arg-type]


def test_a_counter_that_returns_nonsense_is_stopped_naming_the_item() -> None:
    with pytest.raises(EvidenceError, match="candidate 1: token_counter must return"):
        pack_block([Candidate(line="x")], 100, token_counter=lambda text: -1)


def test_a_counter_that_fails_on_the_rendered_block_is_named_as_such() -> None:
    def picky(text: str) -> int:
        if "## Evidence\n\n" in text:
            raise RuntimeError("too long")
        return 1

    with pytest.raises(EvidenceError, match="the rendered block: token_counter raised"):
        pack_block([Candidate(line="x")], 100, token_counter=picky)


def test_the_budget_modes_are_named_by_what_they_count() -> None:
    assert get_args(BudgetCovers) == ("lines", "block")


def counts_nothing_as_a_token(text: str) -> int:
    """As tokenizers that add a start token do: even `""` costs one."""
    return len(text.split()) + 1


@pytest.mark.parametrize("budget", [0, 1, 2, 5])
def test_a_counter_that_counts_empty_text_as_a_token_ends_the_walk_and_reports_no_cost(
    budget: int,
) -> None:
    # Settling a walk drops items from the tail until the block fits: with nothing left there is
    # no block to send, whatever the counter says of "", so the walk ends with nothing kept.
    candidates = [Candidate(line="a b c d e f g h"), Candidate(line="i j")]
    result = pack_block(candidates, budget, token_counter=counts_nothing_as_a_token)
    assert result.evidence == ()
    assert result.to_markdown() == ""


def test_a_counter_that_counts_empty_text_as_a_token_still_fits_what_it_can() -> None:
    from langchain_core.documents import Document

    from aizk_integrations.langchain import AizkEvidenceCompressor

    packer = AizkEvidenceCompressor(
        budget=4000, budget_covers="block", token_counter=counts_nothing_as_a_token
    )
    documents = [Document("one two"), Document("three")]
    unscoped = {"allow_scoped_without_reader": True}
    packer = packer.model_copy(update=unscoped)
    assert packer.compress_documents(documents, "", None)  # something kept, the loop ended
    room0 = packer.as_runnable().invoke(documents, {"configurable": {"aizk_room": 0}})
    assert room0 == ""
