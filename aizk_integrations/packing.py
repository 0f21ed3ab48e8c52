"""The packing walk: deciding where to stop in a list that is already in merit order."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from enum import StrEnum
from typing import NamedTuple, Protocol

from aizk_integrations.candidate import Candidate, Lane
from aizk_integrations.tokens import TokenCounter, counted_tokens


class Decision(StrEnum):
    """What the walk did with one candidate, as the cut table spells it."""

    KEEP = "keep"
    OVER_BUDGET = "drop, over budget"
    AFTER_CUT = "drop, after the cut"


class CutRow(Protocol):
    """What the cut table shows of one step of a walk."""

    @property
    def rank(self) -> int: ...
    @property
    def lane(self) -> Lane: ...
    @property
    def tokens(self) -> int: ...
    @property
    def running(self) -> int: ...
    @property
    def decision(self) -> Decision: ...


class PackStep(NamedTuple):
    """One row of the walk: enough to explain a cut, never shown to the model."""

    rank: int
    candidate: Candidate
    tokens: int
    running: int
    decision: Decision

    @property
    def lane(self) -> Lane:
        """The lane the table names; lanes stay out of everything a model reads."""
        return self.candidate.lane


class CutStep(NamedTuple):
    """A step of a walk over rows that never became candidates."""

    rank: int
    lane: Lane
    tokens: int
    running: int
    decision: Decision


def check_budget(budget: object) -> int:
    """A budget is a plain int >= 0; `True` is not a budget even though Python says it is 1."""
    if isinstance(budget, bool) or not isinstance(budget, int):
        raise TypeError(f"budget must be an int >= 0, not {type(budget).__name__} {budget!r}")
    if budget < 0:
        raise ValueError(f"budget must be an int >= 0, got {budget}")
    return budget


def walk(
    candidates: Iterable[Candidate],
    budget: int,
    *,
    token_counter: TokenCounter | None = None,
) -> Iterator[PackStep]:
    """Walk every candidate, recording the running cost and the decision for each.

    Each candidate costs its tokens plus one for the newline that joins the lines. The walk
    itself never stops early; `pack` stops consuming it at the first drop.
    """
    check_budget(budget)
    return _walk(candidates, budget, token_counter)


def by_rank(rank: int) -> str:
    """How an error names a candidate when the caller has no other name for it."""
    return f"candidate {rank}"


def _walk(
    candidates: Iterable[Candidate],
    budget: int,
    token_counter: TokenCounter | None,
) -> Iterator[PackStep]:
    running = 0
    cut = False
    for rank, candidate in enumerate(candidates, start=1):
        if token_counter is None:
            tokens = candidate.token_count
        else:
            tokens = counted_tokens(token_counter, candidate.line, by_rank, rank)
        running += tokens + 1
        if cut:
            decision = Decision.AFTER_CUT
        elif running <= budget:
            decision = Decision.KEEP
        else:
            cut = True
            decision = Decision.OVER_BUDGET
        yield PackStep(rank, candidate, tokens, running, decision)


def pack(
    candidates: Iterable[Candidate], budget: int, *, token_counter: TokenCounter | None = None
) -> list[Candidate]:
    """Cut candidates to the longest prefix whose cost stays within the token budget.

    A prefix cut, not a knapsack: once one candidate blows the budget, nothing after it is
    kept even if it would fit, because reordering the tail to squeeze in a cheap late item would
    quietly promote it above things that beat it. The input is read lazily and at most one
    item past the cut is pulled, so the cost follows what is kept, not what was retrieved.
    """
    kept: list[Candidate] = []
    for step in walk(candidates, budget, token_counter=token_counter):
        if step.decision is not Decision.KEEP:
            break
        kept.append(step.candidate)
    return kept


def cut_table(steps: Iterable[CutRow], budget: int) -> str:
    """Render a walk as the seed's plain-text table of what was kept and why the rest was not.

    A debugging view: it names lanes, so it belongs in logs and notebooks, never in a prompt.
    """
    lines = [
        f"  rank  lane            tokens  running  budget {budget}",
        "  ----  --------------  ------  -------  " + "-" * len(f"budget {budget}"),
    ]
    lines.extend(
        f"  {step.rank:>4}  {step.lane.value:<14}  {step.tokens:>6}  "
        f"{step.running:>7}  {step.decision.value}"
        for step in steps
    )
    return "\n".join(lines)


def explain(
    candidates: Iterable[Candidate], budget: int, *, token_counter: TokenCounter | None = None
) -> str:
    """The cut table for every candidate, including those after the cut (it reads them all)."""
    return cut_table(walk(candidates, budget, token_counter=token_counter), budget)
