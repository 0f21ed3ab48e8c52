"""The settings both framework adapters share, and the one run they make with them.

Each adapter is a pydantic model of its framework's base class that also inherits these
fields, so LangChain and LlamaIndex users configure the packer the same way and the rules are
written once. Nothing here imports a framework: an adapter says where an item keeps its
metadata and its text.
"""

from __future__ import annotations

import logging
import pickle
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from aizk_integrations._defaults import DEFAULT_BUDGET, DEFAULT_CHARS_PER_TOKEN, DEFAULT_MAX_BUDGET
from aizk_integrations._packing import Packing, check_budget, cut
from aizk_integrations._pricing import BudgetCovers, pricing_for
from aizk_integrations._rows import Access, MetadataKeys, Reading, Withheld
from aizk_integrations._scopes import ScopeDirectory
from aizk_integrations._tokens import CharsPerToken, TokenCounter, check_chars_per_token

Item = TypeVar("Item")


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
        description=(
            "The reader's scopes, for calls that name no reader of their own. None: such calls "
            "show only items that name no scope, unlabelled."
        ),
    )
    allow_unscoped: bool = Field(
        default=False,
        strict=True,
        description="With a reader, also show items whose metadata names no scope.",
    )
    allow_scoped_without_reader: bool = Field(
        default=False,
        strict=True,
        description=(
            "With no reader for a call (no directory, no per-request reader), also show items "
            "that name scopes, unlabelled. Off by default: such items are withheld. Turn it on "
            "only where every caller may see everything, such as a single-user app."
        ),
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
    citation_keys: Sequence[str] = Field(
        default=(),
        description=(
            "Metadata keys copied from each kept input item onto the items returned on their "
            "own (return_documents / return_nodes), for apps that render citations: e.g. "
            "'source', 'page', 'file_name', 'page_label', 'start_index'. Never on the block, "
            "never in the prompt."
        ),
    )
    budget_covers: BudgetCovers = Field(
        default="lines",
        description=(
            "What the budget pays for: 'lines', the evidence lines only (the seed's rule), or "
            "'block', the whole rendered block, labels and headers included."
        ),
    )

    @field_validator("chars_per_token", mode="before")
    @classmethod
    def _sensible_ratio(cls, value: object) -> float:
        try:
            return check_chars_per_token(value)
        except TypeError as error:
            raise ValueError(str(error)) from None

    @field_validator("citation_keys", mode="after")
    @classmethod
    def _fixed_keys(cls, keys: Sequence[str]) -> tuple[str, ...]:
        return tuple(keys)

    @model_validator(mode="after")
    def _budget_within_ceiling(self) -> PackingSettings:
        self._call_budget(self.budget)
        return self

    def _call_budget(self, budget: object) -> int:
        """A budget for this adapter: an int from 1 to `max_budget`."""
        budget = check_budget(budget)
        if not 1 <= budget <= self.max_budget:
            raise ValueError(
                f"budget must be between 1 and max_budget ({self.max_budget}), got {budget}"
            )
        return budget

    def _pack(
        self,
        items: Sequence[Item],
        metadata_of: Callable[[Item, int], object],
        text_of: Callable[[Item, int], object],
        *,
        expected: str,
        budget: int | None = None,
        reader: ScopeDirectory | None = None,
        counter: TokenCounter | None = None,
    ) -> Packing:
        """Read, authorize and pack `items` in the order given, up to one item past the cut.

        A per-call `budget`, `reader` or `counter` replaces the instance's; a call can switch
        readers but cannot switch authorization off. `expected` names what `items` should be,
        for the error when it is not a sequence. Raises `ItemError` for a malformed item: the
        adapter names it.
        """
        if isinstance(items, str | bytes) or not isinstance(items, Sequence):
            hint = ""
            if isinstance(items, Iterator):
                hint = "; materialise it first, e.g. list(...)"
            elif isinstance(items, Mapping):
                hint = "; pick the items out of it first"
            elif items is not None:
                hint = "; wrap a single item in a list"
            raise TypeError(f"expected {expected}, got {type(items).__name__}{hint}")
        access = Access(
            self.directory if reader is None else reader,
            self.allow_unscoped,
            self.allow_scoped_without_reader,
        )
        keys = MetadataKeys(
            self.lane_key, self.scopes_key, self.artifact_id_key, self.artifact_content_id_key
        )
        reading = Reading(items, metadata_of, text_of, keys, access)
        counter = counter or self.token_counter or CharsPerToken(self.chars_per_token)
        pricing = pricing_for(self.budget_covers, counter)
        packing = cut(reading, self.budget if budget is None else budget, pricing)
        return packing._replace(withheld=tuple(reading.withheld), total=len(items))

    def __getstate__(self) -> dict[str, Any]:
        # LlamaIndex's own version deletes what it cannot pickle from the live object's
        # attributes, breaking the original and silently changing the copy; pickle's own error
        # for a lambda names no setting. Pickle pydantic's plain state instead, and say plainly
        # when the token counter is what cannot be pickled.
        try:
            pickle.dumps(self.token_counter)
        except Exception as error:
            raise TypeError(
                f"this {type(self).__name__}'s token_counter "
                f"({type(self.token_counter).__name__}) cannot be pickled; use a counter from "
                "aizk_integrations.counters or a module-level function"
            ) from error
        return BaseModel.__getstate__(self)

    def _report(self, packing: Packing, logger: logging.Logger, per_request: str) -> None:
        """Log the cut table at DEBUG, and say at WARNING why evidence is missing, if it matters.

        `per_request` tells a user of this adapter how to name a call's reader. Evidence held
        back for want of a reader is always worth a warning (it is the fail-closed default at
        work); otherwise only a call that read items and kept none is, with the reason that
        applies: the budget, when the first item the reader may see did not fit it, or else
        the rule that withheld everything.
        """
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("aizk evidence cut:\n%s", packing.table())
        # Only what was withheld, or a call that read items and kept none, can need a word.
        worth_a_look = packing.withheld or (packing.steps and not packing.kept)
        if worth_a_look and logger.isEnabledFor(logging.WARNING):
            message = self._missing_message(packing, per_request)
            if message:
                logger.warning("%s", message)

    def _missing_message(self, packing: Packing, per_request: str) -> str | None:
        reasons = Counter(reason for _, reason in packing.withheld)
        advice = []
        if reasons[Withheld.NO_READER]:
            advice.append(
                f"{_items(reasons[Withheld.NO_READER], 'name')} scopes and the call has no "
                f"reader: give the adapter a directory, {per_request}, or set "
                "allow_scoped_without_reader=True where every caller may see everything"
            )
        elif packing.kept:
            return None
        if not packing.kept and packing.steps:
            if packing.budget:  # 0 is a room of none, which the caller was already told of
                # A whole-block count can put it over even when its estimate was within.
                running = packing.steps[0].running
                need = (
                    f"needs {running} tokens, over"
                    if running > packing.budget
                    else "with the block around it is over"
                )
                advice.append(
                    f"the first item the reader may see {need} the budget of "
                    f"{packing.budget}: raise the budget or shorten the evidence"
                )
        elif not packing.kept:
            if reasons[Withheld.UNSCOPED]:
                advice.append(
                    f"{_items(reasons[Withheld.UNSCOPED], 'name')} no scope under the metadata key "
                    f"{self.scopes_key!r}: put their scope ids there, or set allow_unscoped=True"
                )
            if reasons[Withheld.NOT_PERMITTED]:
                advice.append(
                    f"{_items(reasons[Withheld.NOT_PERMITTED], 'name')} a scope outside the "
                    "reader's directory"
                )
        if not advice:
            return None
        read = len(packing.steps) + len(packing.withheld)
        return (
            f"aizk withheld {len(packing.withheld)} of the {read} items read and kept "
            f"{len(packing.kept)}: " + "; ".join(advice)
        )


def _items(count: int, verb: str) -> str:
    """`1 item names`, `4 items name`: a count of items and what they do, in agreement."""
    return f"1 item {verb}s" if count == 1 else f"{count} items {verb}"
