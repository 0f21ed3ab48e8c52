"""The packing walk: deciding where to stop in a list that is already in merit order.

There is one walk. `pack` (the seed's six lines), `pack_block`, `explain` and both adapters all
go through it; what a budget pays for changes only how each item is priced (`_pricing`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from enum import StrEnum
from typing import Any, NamedTuple

from aizk_integrations._candidate import Candidate, candidate_rows
from aizk_integrations._errors import naming_items
from aizk_integrations._pricing import BlockPricing, LinesPricing, Pricing
from aizk_integrations._rendering import render, shared_scopes
from aizk_integrations._result import RecallResult, public_json
from aizk_integrations._rows import Row, Withheld
from aizk_integrations._scopes import Scope, ScopeDirectory
from aizk_integrations._tokens import SEED_COUNTER, TokenCounter


class Decision(StrEnum):
    """What the walk did with one item, as the cut table spells it."""

    KEEP = "keep"
    OVER_BUDGET = "drop, over budget"
    AFTER_CUT = "drop, after the cut"


class Step(NamedTuple):
    """One row of the walk: enough to explain a cut, never shown to the model."""

    rank: int
    row: Row
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


def walk(rows: Iterable[Row], budget: int, pricing: Pricing) -> Iterator[Step]:
    """Every row in order with its price, the running total and the decision.

    A prefix cut, not a knapsack: once one row blows the budget, nothing after it is kept even
    if it would fit, because reordering the tail to squeeze in a cheap late item would quietly
    promote it above things that beat it. The walk itself never stops early (the cut table
    shows what came after the cut); `cut` stops pulling at the first drop.
    """
    over = False
    for rank, row in enumerate(rows, start=1):
        tokens, running = pricing(row)
        if over:
            decision = Decision.AFTER_CUT
        elif running <= budget:
            decision = Decision.KEEP
        else:
            over = True
            decision = Decision.OVER_BUDGET
        yield Step(rank, row, tokens, running, decision)


class Packing(NamedTuple):
    """One walk's outcome: what was kept, what was read, and the counts a caller is told.

    The kept rows stay rows: the block and the public JSON, which every adapter call needs, are
    made from them directly, and `result()` builds the public models only for a caller that
    wants them.
    """

    kept: tuple[Row, ...]
    shared_scopes: tuple[Scope, ...]
    """The organizations' scopes the kept rows came from, as the block's header lists them."""
    steps: tuple[Step, ...]
    """The rows the walk read: the kept ones and the one that ended it."""
    tokens_used: int
    budget: int
    withheld: tuple[tuple[int, Withheld], ...]
    """Position and reason of each item read that the reader may not see."""
    total: int
    """How many items there were: `cut` knows only the rows it read; an adapter, which knows
    how many it was handed, says."""

    def result(self) -> RecallResult:
        """The kept evidence as the public `RecallResult`."""
        return RecallResult.from_rows(self.kept)

    def block(self) -> str:
        """The markdown block, equal to `result().to_markdown()`."""
        return render(self.kept, self.shared_scopes)

    def public_json(self) -> dict[str, Any]:
        """The public JSON, equal to `result().model_dump(mode="json")`."""
        return public_json(self.kept, self.shared_scopes)

    @property
    def cut_by_budget(self) -> int:
        """Items the budget left out: the one that ended the walk, and all after it."""
        return self.total - len(self.kept) - len(self.withheld)

    @property
    def counts(self) -> dict[str, int]:
        """The public counts: no lanes, scores or ids."""
        return {
            "kept": len(self.kept),
            "cut_by_budget": self.cut_by_budget,
            "withheld": len(self.withheld),
            "tokens_used": self.tokens_used,
            "budget": self.budget,
        }

    def table(self) -> str:
        """The cut table of the rows read; rows after the cut were never read."""
        unread = self.cut_by_budget - (len(self.steps) - len(self.kept))
        note = f"\n  ({unread} more after the cut, not read)" if unread > 0 else ""
        return cut_table(self.steps, self.budget, self.withheld) + note


def cut(rows: Iterable[Row], budget: int, pricing: Pricing) -> Packing:
    """Walk until the first row that does not fit, pulling at most one row past the cut.

    Cost grows with what is kept, not with how much was retrieved.
    """
    kept: list[Row] = []
    steps: list[Step] = []
    for step in walk(rows, budget, pricing):
        steps.append(step)
        if step.decision is not Decision.KEEP:
            break
        kept.append(step.row)
    walked = steps[len(kept) - 1].running if kept else 0
    count, tokens_used = pricing.settle(kept, walked, budget)
    if count < len(kept):  # the settled count moved the cut back
        steps = [
            step._replace(decision=_decision(index, count)) for index, step in enumerate(steps)
        ]
        del kept[count:]
    return Packing(
        tuple(kept), shared_scopes(kept), tuple(steps), tokens_used, budget, (), len(steps)
    )


def _decision(index: int, kept: int) -> Decision:
    if index < kept:
        return Decision.KEEP
    return Decision.OVER_BUDGET if index == kept else Decision.AFTER_CUT


def cut_table(
    steps: Iterable[Step], budget: int, withheld: Iterable[tuple[int, Withheld]] = ()
) -> str:
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
            step.row.position,
            f"  {step.rank:>4}  {step.row.lane.value:<14}  {step.tokens:>6}  "
            f"{step.running:>7}  {step.decision.value}",
        )
        for step in steps
    ]
    rows.extend(
        (position, f"  {'-':>4}  {'-':<14}  {'-':>6}  {'-':>7}  withheld: {reason.value}")
        for position, reason in withheld
    )
    lines.extend(line for _, line in sorted(rows))  # by position: no two rows share one
    return "\n".join(lines)


def _candidate(position: int, authorized: bool) -> str:
    return f"candidate {position + 1}"


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

    pricing = LinesPricing(_counter(token_counter))
    with naming_items(_candidate):
        packing = cut(candidate_rows(remembered(), None), budget, pricing)
    return pulled[: len(packing.kept)]


def explain(
    candidates: Iterable[Candidate], budget: int, *, token_counter: TokenCounter | None = None
) -> str:
    """The cut table for every candidate, including those after the cut (it reads them all)."""
    check_budget(budget)
    pricing = LinesPricing(_counter(token_counter))
    with naming_items(_candidate):
        steps = list(walk(candidate_rows(candidates, None), budget, pricing))
    return cut_table(steps, budget)


def pack_block(
    candidates: Iterable[Candidate],
    budget: int,
    directory: ScopeDirectory | None = None,
    *,
    token_counter: TokenCounter | None = None,
) -> RecallResult:
    """The prefix of `candidates` whose whole rendered block fits `budget` tokens.

    Same prefix cut as `pack`, paid in tokens of the block a prompt receives rather than of its
    evidence lines, so `token_counter(result.to_markdown()) <= budget` for every input (the
    default counter is the seed's `ceil(len / 4)`). With that heuristic the prefix is the
    longest that fits; a real tokenizer's walk errs on the high side, so it may stop an item
    early rather than ever overflow. The directory is part of the cost because it decides the
    scope labels and header that are rendered; as in `RecallResult.from_candidates`, the
    candidates must already be ones the reader may see.
    """
    check_budget(budget)
    pricing = BlockPricing(_counter(token_counter))
    with naming_items(_candidate):
        packing = cut(candidate_rows(candidates, directory), budget, pricing)
    return packing.result()


def _counter(token_counter: TokenCounter | None) -> TokenCounter:
    return SEED_COUNTER if token_counter is None else token_counter
