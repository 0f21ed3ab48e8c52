"""The packing walk: deciding where to stop in a list that is already in merit order.

There is one walk. `pack` (the seed's six lines), `pack_block`, `explain` and both adapters all
go through it; what a budget pays for changes only how each item is priced (`_pricing`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from enum import StrEnum
from typing import NamedTuple

from aizk_integrations._core.candidate import Candidate, candidate_evidence
from aizk_integrations._core.evidence import Evidence
from aizk_integrations._core.lanes import Lane
from aizk_integrations._core.pricing import BlockPricing, LinesPricing, Pricing
from aizk_integrations._core.result import RecallResult
from aizk_integrations._errors import naming_items
from aizk_integrations._scopes.directory import ScopeDirectory
from aizk_integrations._tokens import SEED_COUNTER, TokenCounter, check_budget


class Found(NamedTuple):
    """An item the reader may see, as read: where it stood in the input, its lane, its evidence."""

    position: int
    lane: Lane
    evidence: Evidence


class Decision(StrEnum):
    """What the walk did with one item, as the cut table spells it."""

    KEEP = "keep"
    OVER_BUDGET = "drop, over budget"
    AFTER_CUT = "drop, after the cut"


class Step(NamedTuple):
    """One item of the walk: enough to explain a cut, never shown to the model."""

    rank: int
    position: int
    """Where the item stood in the input."""
    lane: Lane
    evidence: Evidence
    tokens: int
    running: int
    decision: Decision


def walk(items: Iterable[Found], budget: int, pricing: Pricing) -> Iterator[Step]:
    """Every item in order with its price, the running total and the decision.

    A prefix cut, not a knapsack: once one item blows the budget, nothing after it is kept even
    if it would fit, because reordering the tail to squeeze in a cheap late item would quietly
    promote it above things that beat it. The walk itself never stops early (the cut table
    shows what came after the cut); `cut` stops pulling at the first drop.
    """
    over = False
    for rank, item in enumerate(items, start=1):
        tokens, running = pricing(item.evidence, item.position)
        if over:
            decision = Decision.AFTER_CUT
        elif running <= budget:
            decision = Decision.KEEP
        else:
            over = True
            decision = Decision.OVER_BUDGET
        yield Step(rank, item.position, item.lane, item.evidence, tokens, running, decision)


class Cut(NamedTuple):
    """Where a walk stopped: the steps it read and the tokens the kept prefix uses."""

    kept: tuple[Step, ...]
    """The steps of the kept items: always the first of `steps`."""
    steps: tuple[Step, ...]
    """The items read: the kept ones first, then the one that ended the walk, if any."""
    tokens_used: int


def cut(items: Iterable[Found], budget: int, pricing: Pricing) -> Cut:
    """Walk until the first item that does not fit, pulling at most one item past the cut.

    Cost grows with what is kept, not with how much was retrieved.
    """
    steps: list[Step] = []
    for step in walk(items, budget, pricing):
        steps.append(step)
        if step.decision is not Decision.KEEP:
            break
    kept = [step.evidence for step in steps if step.decision is Decision.KEEP]
    walked = steps[len(kept) - 1].running if kept else 0
    count, tokens_used = pricing.settle(kept, walked, budget)
    if count < len(kept):  # the finished block counted more: the settled count moves the cut
        steps = [_decided(step, index, count) for index, step in enumerate(steps)]
    return Cut(tuple(steps[:count]), tuple(steps), tokens_used)


def _decided(step: Step, index: int, kept: int) -> Step:
    """The step as the settled cut decides it: the first `kept` steps are kept."""
    if index < kept:
        decision = Decision.KEEP
    else:
        decision = Decision.OVER_BUDGET if index == kept else Decision.AFTER_CUT
    return step if step.decision is decision else step._replace(decision=decision)


def cut_table(steps: Iterable[Step], budget: int, withheld: Iterable[tuple[int, str]] = ()) -> str:
    """Render a walk as the seed's plain-text table of what was kept and why the rest was not.

    Items withheld before the walk are listed where they stood, by reason only: they were
    never read past their scopes. A debugging view: it names lanes, so it belongs in logs and
    notebooks, never in a prompt.
    """
    lines = [
        f"  rank  lane            tokens  running  budget {budget}",
        "  ----  --------------  ------  -------  " + "-" * len(f"budget {budget}"),
    ]
    rows = [
        (
            step.position,
            f"  {step.rank:>4}  {step.lane.value:<14}  {step.tokens:>6}  "
            f"{step.running:>7}  {step.decision.value}",
        )
        for step in steps
    ]
    rows.extend(
        (position, f"  {'-':>4}  {'-':<14}  {'-':>6}  {'-':>7}  withheld: {reason}")
        for position, reason in withheld
    )
    lines.extend(line for _, line in sorted(rows))  # by position: no two rows share one
    return "\n".join(lines)


def _candidate(position: int, authorized: bool) -> str:
    return f"candidate {position + 1}"


def _found(candidates: Iterable[Candidate], reader: ScopeDirectory | None) -> Iterator[Found]:
    for position, candidate in enumerate(candidates):
        yield Found(position, candidate.lane, candidate_evidence(candidate, reader))


def pack(
    candidates: Iterable[Candidate], budget: int, *, token_counter: TokenCounter | None = None
) -> list[Candidate]:
    """Cut candidates to the longest prefix whose cost stays within the token budget.

    Each candidate costs its tokens (`ceil(len(line) / 4)`, or `token_counter`'s count) plus one
    for the newline that joins the lines. The input is read lazily and at most one candidate
    past the cut is pulled, so the cost follows what is kept, not what was retrieved.
    """
    check_budget(budget)
    pulled: list[Candidate] = []

    def remembered() -> Iterator[Candidate]:
        for candidate in candidates:
            pulled.append(candidate)
            yield candidate

    pricing = LinesPricing(SEED_COUNTER if token_counter is None else token_counter)
    with naming_items(_candidate):
        walked = cut(_found(remembered(), None), budget, pricing)
    return pulled[: len(walked.kept)]


def explain(
    candidates: Iterable[Candidate], budget: int, *, token_counter: TokenCounter | None = None
) -> str:
    """The cut table for every candidate, including those after the cut (it reads them all)."""
    check_budget(budget)
    pricing = LinesPricing(SEED_COUNTER if token_counter is None else token_counter)
    with naming_items(_candidate):
        steps = list(walk(_found(candidates, None), budget, pricing))
    return cut_table(steps, budget)


def pack_block(
    candidates: Iterable[Candidate],
    budget: int,
    reader: ScopeDirectory | None = None,
    *,
    token_counter: TokenCounter | None = None,
) -> RecallResult:
    """The prefix of `candidates` whose whole rendered block fits `budget` tokens.

    Same prefix cut as `pack`, paid in tokens of the block a prompt receives rather than of its
    evidence lines, so `token_counter(result.to_markdown()) <= budget` for every input (the
    default counter is the seed's `ceil(len / 4)`). With that heuristic the prefix is the
    longest that fits; a real tokenizer's walk errs on the high side, so it may stop an item
    early rather than ever overflow. The reader is part of the cost because it decides the
    scope labels and header that are rendered; as in `RecallResult.from_candidates`, the
    candidates must already be ones the reader may see.
    """
    check_budget(budget)
    pricing = BlockPricing(SEED_COUNTER if token_counter is None else token_counter)
    with naming_items(_candidate):
        walked = cut(_found(candidates, reader), budget, pricing)
    return RecallResult(evidence=tuple(step.evidence for step in walked.kept))
