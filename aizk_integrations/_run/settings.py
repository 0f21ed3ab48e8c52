"""The settings both framework adapters share, validated once when an adapter is built.

Each adapter is a pydantic model of its framework's base class that also inherits these
fields, so LangChain and LlamaIndex users configure the packer the same way and the rules are
written once. The run the adapters make with them is `_run.run.run`.
"""

from __future__ import annotations

import difflib
import inspect
import pickle
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from aizk_integrations._core.pricing import BudgetCovers
from aizk_integrations._defaults import DEFAULT_BUDGET, DEFAULT_CHARS_PER_TOKEN, DEFAULT_MAX_BUDGET
from aizk_integrations._errors import quoted
from aizk_integrations._scopes.directory import ScopeDirectory
from aizk_integrations._text import check_encodable
from aizk_integrations._tokens import (
    TokenCounter,
    check_budget,
    check_chars_per_token,
    check_loads,
)


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`; did you mean 'budget'?` for the known name closest to a misspelled one, else ""."""
    close = difflib.get_close_matches(name, sorted(known), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def not_a_setting(
    name: object, owner: str, known: Iterable[str], instead: Mapping[str, str] | None = None
) -> str:
    """What to say of a setting `owner` does not take: its name, and the one meant.

    `instead` maps what another framework calls a setting to this one's name (LangChain's `k`
    is LlamaIndex's `similarity_top_k`), which no spelling distance would find.
    """
    known = sorted(known)
    if not known:
        return f"{quoted(name)} is not a setting of {owner}, which takes none"
    if not isinstance(name, str):
        return f"{quoted(name)} is not a setting of {owner}"
    meant = (instead or {}).get(name)
    hint = f"; did you mean {meant!r}?" if meant in known else did_you_mean(name, known)
    return f"{quoted(name)} is not a setting of {owner}{hint}"


def refuse_unknown_keywords(
    owner: str,
    unknown: Mapping[str, object],
    takes: Callable[..., object],
    instead: Mapping[str, str] | None = None,
) -> None:
    """A `TypeError` for the first keyword `takes` has no parameter for, naming the one meant.

    For adapters built by a plain `__init__` or `from_defaults`, which gather what they do not
    take in `**unknown: Never` (so a type checker still refuses it) to say it better than
    Python's bare "unexpected keyword argument".
    """
    if not unknown:
        return
    parameters = inspect.signature(takes).parameters.values()
    known = [p.name for p in parameters if p.kind in _KEYWORDS and p.name not in _BOUND]
    raise TypeError(not_a_setting(next(iter(unknown)), owner, known, instead))


_KEYWORDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
_BOUND = ("self", "cls")


class KnownSettings(BaseModel):
    """A pydantic adapter that refuses a setting it does not take by name, with the closest
    one it does: pydantic's own "Extra inputs are not permitted" says neither."""

    @model_validator(mode="before")
    @classmethod
    def _known_settings(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        fields = cls.model_fields
        known = {*fields, *(field.alias for field in fields.values() if field.alias)}
        errors = [
            InitErrorDetails(
                type=PydanticCustomError(
                    "extra_forbidden",
                    "{message}",
                    {"message": not_a_setting(name, cls.__name__, known)},
                ),
                loc=(name,),
                input=data[name],
            )
            for name in data
            if name not in known
        ]
        if errors:
            hide = bool(cls.model_config.get("hide_input_in_errors"))
            raise ValidationError.from_exception_data(cls.__name__, errors, hide_input=hide)
        return data


class PackingSettings(KnownSettings):
    """Budget, reader and metadata conventions, validated when the adapter is built."""

    model_config = ConfigDict(extra="forbid")

    budget: int = Field(
        frozen=True,
        default=DEFAULT_BUDGET,
        strict=True,
        description="Tokens of evidence to keep; 1 <= budget <= max_budget.",
    )
    max_budget: int = Field(
        frozen=True,
        default=DEFAULT_MAX_BUDGET,
        strict=True,
        ge=1,
        description="Ceiling on budget, including budgets changed per call.",
    )
    reader: ScopeDirectory | None = Field(
        frozen=True,
        default=None,
        description=(
            "The reader's scopes, for calls that name no reader of their own. None: such calls "
            "show only public items, unlabelled."
        ),
    )
    allow_unscoped: bool = Field(
        frozen=True,
        default=False,
        strict=True,
        description=(
            "Also show items whose metadata names no scope, for a corpus public as a whole. Off "
            "by default: public evidence names the public scope (scope_metadata(PUBLIC)), so an "
            "item whose scopes a pipeline stripped is shown to no one."
        ),
    )
    allow_scoped_without_reader: bool = Field(
        frozen=True,
        default=False,
        strict=True,
        description=(
            "With no reader for a call (no directory, no per-request reader), show every item, "
            "unlabelled: those that name scopes and those that name none. Off by default: only "
            "public items are shown. Turn it on only where every caller may see everything, "
            "such as a single-user app."
        ),
    )
    raise_on_malformed: bool = Field(
        frozen=True,
        default=False,
        strict=True,
        description=(
            "Raise EvidenceError on a malformed item the reader may read (an unknown lane, "
            "text that is not text, an id that is not a UUID), for ingestion checks and tests. "
            "Off by default: such an item is withheld, counted as malformed and named in a "
            "WARNING, so one bad record never fails a request."
        ),
    )
    lane_key: str = Field(
        frozen=True, default="lane", min_length=1, description="Metadata key of the lane."
    )
    scopes_key: str = Field(
        frozen=True, default="scopes", min_length=1, description="Metadata key of the scope ids."
    )
    artifact_id_key: str = Field(
        frozen=True,
        default="artifact_id",
        min_length=1,
        description="Metadata key of the artifact UUID.",
    )
    artifact_content_id_key: str = Field(
        frozen=True,
        default="artifact_content_id",
        min_length=1,
        description="Metadata key of the artifact revision UUID.",
    )
    chars_per_token: float = Field(
        frozen=True,
        default=DEFAULT_CHARS_PER_TOKEN,
        description="Heuristic ratio used when no token_counter is given.",
    )
    token_counter: TokenCounter | None = Field(
        frozen=True,
        default=None,
        exclude=True,
        description="Counts a text's tokens; overrides chars_per_token.",
    )
    citation_keys: Sequence[str] = Field(
        frozen=True,
        default=(),
        description=(
            "Metadata keys that say where an item comes from, for apps that render citations: "
            "e.g. 'source', 'page', 'file_name', 'page_label', 'start_index'. Copied onto the "
            "items returned on their own (return_documents / return_nodes), and, with cite, "
            "shown in the block as each item's citation and listed in its metadata."
        ),
    )
    cite: bool = Field(
        frozen=True,
        default=False,
        strict=True,
        description=(
            "Number each item of the block for citing ('Cite as [1]: source: plan.md, page: 3', "
            "from citation_keys, shown in code spans), so the model can cite [n] and the app "
            "can map [n] back: the block's metadata lists each number's item (aizk_citations)."
        ),
    )
    budget_covers: BudgetCovers = Field(
        frozen=True,
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
        return tuple(map(check_encodable, keys))  # each is shown in the block, key: value

    @model_validator(mode="after")
    def _budget_within_ceiling(self) -> PackingSettings:
        call_budget(self, self.budget)
        return self

    @model_validator(mode="after")
    def _counter_loads(self) -> PackingSettings:
        if self.token_counter is not None:
            check_loads(self.token_counter)
        return self

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


def call_budget(settings: PackingSettings, budget: object) -> int:
    """A budget for this adapter, as built or as a call asks: an int from 1 to `max_budget`."""
    budget = check_budget(budget)
    if not 1 <= budget <= settings.max_budget:
        raise ValueError(
            f"budget must be between 1 and max_budget ({settings.max_budget}), got {budget}"
        )
    return budget
