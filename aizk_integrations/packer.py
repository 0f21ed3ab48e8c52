"""The settings and the run that both framework adapters share.

Each adapter is a pydantic model of its framework's base class that also inherits these
fields, so LangChain and LlamaIndex users configure the packer the same way and the rules are
written once. Nothing here imports a framework: an adapter hands over `(text, metadata)` pairs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from aizk_integrations.block_budget import BudgetCovers, cut_block
from aizk_integrations.candidate import Candidate
from aizk_integrations.defaults import DEFAULT_BUDGET, DEFAULT_CHARS_PER_TOKEN, DEFAULT_MAX_BUDGET
from aizk_integrations.errors import EvidenceError
from aizk_integrations.metadata import MetadataFieldError, candidate_from_metadata
from aizk_integrations.packing import Decision, PackStep, check_budget, cut_table, walk
from aizk_integrations.result import RecallResult
from aizk_integrations.scopes import ScopeDirectory
from aizk_integrations.tokens import CharsPerToken, TokenCounter, check_chars_per_token

Describe = Callable[[int], str]
"""Names the item at a position (its id when it has one) for an error message."""


class PackOutcome(NamedTuple):
    """What one adapter call produced, with the counts it reports beside the block."""

    result: RecallResult
    kept_positions: tuple[int, ...]
    withheld: int
    cut: int
    tokens_used: int
    budget: int
    steps: tuple[PackStep, ...]

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
        positions: list[int] = []
        withheld = 0

        def authorized() -> Iterator[Candidate]:
            nonlocal withheld
            for position, (text, metadata) in enumerate(items):
                candidate = self._candidate(text, metadata, position, describe)
                if reader is not None and not reader.permits(
                    candidate.scopes, allow_unscoped=self.allow_unscoped
                ):
                    withheld += 1
                    continue
                positions.append(position)
                yield candidate

        if self.budget_covers is BudgetCovers.BLOCK:
            block = cut_block(
                authorized(),
                budget,
                reader,
                token_counter=self._counter(),
                describe=lambda rank: describe(positions[rank - 1]),
            )
            kept_count = len(block.result.evidence)
            return PackOutcome(
                result=block.result,
                kept_positions=tuple(positions[:kept_count]),
                withheld=withheld,
                cut=total - kept_count - withheld,
                tokens_used=block.tokens,
                budget=budget,
                steps=block.steps,
            )
        steps: list[PackStep] = []
        for step in walk(
            authorized(),
            budget,
            token_counter=self._counter(),
            describe=lambda rank: describe(positions[rank - 1]),
        ):
            steps.append(step)
            if step.decision is not Decision.KEEP:
                break
        kept = [step.candidate for step in steps if step.decision is Decision.KEEP]
        return PackOutcome(
            result=RecallResult.from_candidates(kept, reader),
            kept_positions=tuple(positions[: len(kept)]),
            withheld=withheld,
            cut=total - len(kept) - withheld,
            tokens_used=steps[len(kept) - 1].running if kept else 0,
            budget=budget,
            steps=tuple(steps),
        )

    def _candidate(
        self, text: object, metadata: object, position: int, describe: Describe
    ) -> Candidate:
        try:
            return candidate_from_metadata(
                text,
                metadata,
                lane_key=self.lane_key,
                scopes_key=self.scopes_key,
                artifact_id_key=self.artifact_id_key,
                artifact_content_id_key=self.artifact_content_id_key,
            )
        except MetadataFieldError as error:
            raise EvidenceError(f"{describe(position)}: {error}") from None

    def _counter(self) -> TokenCounter | None:
        if self.token_counter is not None:
            return self.token_counter
        if self.chars_per_token == DEFAULT_CHARS_PER_TOKEN:
            return None  # Candidate.token_count already is this heuristic, without a call.
        return CharsPerToken(self.chars_per_token)
