"""The settings and the run that both framework adapters share.

Each adapter is a pydantic model of its framework's base class that also inherits these
fields, so LangChain and LlamaIndex users configure the packer the same way and the rules are
written once. Nothing here imports a framework: an adapter hands over `(text, metadata)` pairs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from aizk_integrations.block_budget import BudgetCovers, cut_block
from aizk_integrations.defaults import DEFAULT_BUDGET, DEFAULT_CHARS_PER_TOKEN, DEFAULT_MAX_BUDGET
from aizk_integrations.errors import EvidenceError
from aizk_integrations.metadata import MetadataFieldError, MetadataKeys, Row, read_item
from aizk_integrations.packing import CutRow, CutStep, Decision, check_budget, cut_table
from aizk_integrations.rendering import render_rows
from aizk_integrations.result import (
    KeptEvidence,
    RecallResult,
    kept_evidence,
    public_json_of,
    shared_scopes_of,
)
from aizk_integrations.scopes import Scope, ScopeDirectory
from aizk_integrations.tokens import (
    CharsPerToken,
    TokenCounter,
    check_chars_per_token,
    counted_tokens,
    estimate_tokens,
)

Describe = Callable[[int], str]
"""Names the item at a position (its id when it has one) for an error message."""


class PackOutcome(NamedTuple):
    """What one adapter call produced, with the counts it reports beside the block.

    The kept evidence stays as rows: the block and the public JSON, which every call needs, are
    made from them directly, and `result` builds the public models only for a caller that
    wants them (kept items returned on their own).
    """

    rows: tuple[KeptEvidence, ...]
    shared_scopes: tuple[Scope, ...]
    kept_positions: tuple[int, ...]
    withheld: int
    cut: int
    tokens_used: int
    budget: int
    steps: tuple[CutRow, ...]

    @property
    def result(self) -> RecallResult:
        """The kept evidence as the public `RecallResult`, built on each access."""
        return RecallResult.from_rows(self.rows)

    def block(self) -> str:
        """The markdown block, equal to `result.to_markdown()`."""
        return render_rows(self.rows, self.shared_scopes)

    def public_json(self) -> dict[str, Any]:
        """The public JSON, equal to `result.public_json()`."""
        return public_json_of(self.rows, self.shared_scopes)

    @property
    def counts(self) -> dict[str, int]:
        """The public counts: no lanes, scores or ids."""
        return {
            "kept": len(self.kept_positions),
            "cut_by_budget": self.cut,
            "withheld": self.withheld,
            "tokens_used": self.tokens_used,
            "budget": self.budget,
        }

    def table(self) -> str:
        """The cut table of the items read; items after the cut were never read."""
        unread = self.cut - sum(1 for step in self.steps if step.decision is not Decision.KEEP)
        note = f"\n  ({unread} more after the cut, not read)" if unread > 0 else ""
        return cut_table(self.steps, self.budget) + note


class PackingSettings(BaseModel):
    """Budget, reader and metadata conventions, validated when the adapter is built."""

    model_config = ConfigDict(extra="forbid")

    budget: int = Field(
        default=DEFAULT_BUDGET,
        strict=True,
        description="Tokens of evidence to keep; 1 <= budget <= max_budget.",
    )
    max_budget: int = Field(
        default=DEFAULT_MAX_BUDGET,
        strict=True,
        ge=1,
        description="Ceiling on budget, including budgets changed per call.",
    )
    directory: ScopeDirectory | None = Field(
        default=None,
        description="The reader's scopes; None turns authorization and scope labels off.",
    )
    allow_unscoped: bool = Field(
        default=False,
        strict=True,
        description="With a directory, also show items whose metadata names no scope.",
    )
    lane_key: str = Field(default="lane", min_length=1, description="Metadata key of the lane.")
    scopes_key: str = Field(
        default="scopes", min_length=1, description="Metadata key of the scope ids."
    )
    artifact_id_key: str = Field(
        default="artifact_id", min_length=1, description="Metadata key of the artifact UUID."
    )
    artifact_content_id_key: str = Field(
        default="artifact_content_id",
        min_length=1,
        description="Metadata key of the artifact revision UUID.",
    )
    chars_per_token: float = Field(
        default=DEFAULT_CHARS_PER_TOKEN,
        description="Heuristic ratio used when no token_counter is given.",
    )
    token_counter: TokenCounter | None = Field(
        default=None,
        exclude=True,
        description="Counts a text's tokens; overrides chars_per_token.",
    )
    budget_covers: BudgetCovers = Field(
        default=BudgetCovers.LINES,
        description=(
            "What the budget pays for: 'lines', the evidence lines only (the seed's rule), or "
            "'block', the whole rendered block, labels and headers included."
        ),
    )

    @field_validator("chars_per_token", mode="before")
    @classmethod
    def _finite_ratio(cls, value: object) -> float:
        try:
            return check_chars_per_token(value)
        except TypeError as error:
            raise ValueError(str(error)) from None

    @model_validator(mode="after")
    def _budget_within_ceiling(self) -> PackingSettings:
        self.check_call_budget(self.budget)
        return self

    def check_call_budget(self, budget: object) -> int:
        """A budget for this adapter: an int from 1 to `max_budget`."""
        budget = check_budget(budget)
        if not 1 <= budget <= self.max_budget:
            raise ValueError(
                f"budget must be between 1 and max_budget ({self.max_budget}), got {budget}"
            )
        return budget

    def pack_items(
        self,
        items: Iterable[tuple[object, object]],
        total: int,
        describe: Describe,
        *,
        budget: int | None = None,
        directory: ScopeDirectory | None = None,
    ) -> PackOutcome:
        """Map, authorize and pack `(text, metadata)` pairs in the order given.

        Everything is lazy and stops one item past the cut, so a long retrieval costs no more
        than a short one. Per-call `budget` and `directory` replace the instance's; a call can
        switch readers but cannot switch authorization off.
        """
        budget = self.budget if budget is None else self.check_call_budget(budget)
        reader = self.directory if directory is None else directory
        if self.budget_covers is BudgetCovers.BLOCK:
            return self._pack_block(items, total, describe, budget, reader)
        return self._pack_lines(items, total, describe, budget, reader)

    def _pack_lines(
        self,
        items: Iterable[tuple[object, object]],
        total: int,
        describe: Describe,
        budget: int,
        reader: ScopeDirectory | None,
    ) -> PackOutcome:
        """The seed's walk (`packing.pack`), fused with reading and authorizing in one loop.

        This runs on every chain call, so the rows stay tuples and only the kept ones become
        public models; the walk's rule is `pack`'s, and the tests hold this loop to it.
        """
        keys = self._keys()
        counter = self._counter()
        kept: list[Row] = []
        positions: list[int] = []
        steps: list[CutStep] = []
        withheld = running = position = 0
        try:
            for position, (text, metadata) in enumerate(items):
                row = read_item(text, metadata, keys)
                if reader is not None and not reader.permits(
                    row.scopes, allow_unscoped=self.allow_unscoped
                ):
                    withheld += 1
                    continue
                rank = len(steps) + 1
                if counter is None:
                    tokens = estimate_tokens(row.line)
                else:
                    tokens = counted_tokens(counter, row.line, _naming(describe, position), rank)
                running += tokens + 1  # + 1 pays for the joining newline
                if running > budget:
                    steps.append(CutStep(rank, row.lane, tokens, running, Decision.OVER_BUDGET))
                    break
                steps.append(CutStep(rank, row.lane, tokens, running, Decision.KEEP))
                kept.append(row)
                positions.append(position)
        except MetadataFieldError as error:  # only `read_item` raises it: name the item
            raise _item_error(describe, position, error) from None
        rows = kept_evidence(kept, reader)
        return PackOutcome(
            rows=tuple(rows),
            shared_scopes=shared_scopes_of(rows),
            kept_positions=tuple(positions),
            withheld=withheld,
            cut=total - len(kept) - withheld,
            tokens_used=steps[len(kept) - 1].running if kept else 0,
            budget=budget,
            steps=tuple(steps),
        )

    def _pack_block(
        self,
        items: Iterable[tuple[object, object]],
        total: int,
        describe: Describe,
        budget: int,
        reader: ScopeDirectory | None,
    ) -> PackOutcome:
        """Whole-block budgets: the same reading and authorizing, then `cut_block`."""
        keys = self._keys()
        positions: list[int] = []
        withheld = 0

        def authorized() -> Iterator[Row]:
            nonlocal withheld
            for position, (text, metadata) in enumerate(items):
                try:
                    row = read_item(text, metadata, keys)
                except MetadataFieldError as error:
                    raise _item_error(describe, position, error) from None
                if reader is not None and not reader.permits(
                    row.scopes, allow_unscoped=self.allow_unscoped
                ):
                    withheld += 1
                    continue
                positions.append(position)
                yield row

        block = cut_block(
            authorized(),
            budget,
            reader,
            token_counter=self._counter(),
            describe=lambda rank: describe(positions[rank - 1]),
        )
        kept_count = len(block.evidence)
        return PackOutcome(
            rows=tuple(block.evidence),
            shared_scopes=shared_scopes_of(block.evidence),
            kept_positions=tuple(positions[:kept_count]),
            withheld=withheld,
            cut=total - kept_count - withheld,
            tokens_used=block.tokens,
            budget=budget,
            steps=block.steps,
        )

    def _keys(self) -> MetadataKeys:
        return MetadataKeys(
            self.lane_key, self.scopes_key, self.artifact_id_key, self.artifact_content_id_key
        )

    def _counter(self) -> TokenCounter | None:
        if self.token_counter is not None:
            return self.token_counter
        if self.chars_per_token == DEFAULT_CHARS_PER_TOKEN:
            return None  # Candidate.token_count already is this heuristic, without a call.
        return CharsPerToken(self.chars_per_token)


def _item_error(describe: Describe, position: int, error: MetadataFieldError) -> EvidenceError:
    """The error for a malformed item, naming which one it was."""
    return EvidenceError(f"{describe(position)}: {error}")


def _naming(describe: Describe, position: int) -> Callable[[int], str]:
    """Name the item at `position` in a counter's error, whatever rank the walk gives it."""
    return lambda _rank: describe(position)
