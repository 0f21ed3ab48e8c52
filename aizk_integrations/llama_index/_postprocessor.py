"""`AizkEvidencePostprocessor`: the retrieved nodes in, one evidence block node out."""

from __future__ import annotations

import logging
from collections.abc import Sized
from typing import Any, TypedDict

from llama_index.core.instrumentation import (  # type: ignore[attr-defined]  # the
    get_dispatcher,  # documented path; the name lives in llama_index_instrumentation
)
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.utils import get_tokenizer
from pydantic import ConfigDict, Field, PrivateAttr, model_validator

from aizk_integrations._report import report
from aizk_integrations._run import Packing, expect_sequence, run
from aizk_integrations._scopes import ScopeDirectory
from aizk_integrations._settings import PackingSettings
from aizk_integrations._tokens import TokenCounter
from aizk_integrations.counters import counter_from_llama_index
from aizk_integrations.llama_index._event import AizkEvidencePacked
from aizk_integrations.llama_index._nodes import NODES, block_node, kept_nodes
from aizk_integrations.llama_index._reader import PER_REQUEST, current_reader
from aizk_integrations.llama_index._window import (
    FitTarget,
    check_fit_target,
    counted_as_shown,
    model_of,
    room_for_block,
)

logger = logging.getLogger("aizk_integrations.llama_index")
_dispatcher = get_dispatcher("aizk_integrations.llama_index")

THROUGH_RETRIEVAL = (
    "the retriever had already sent their text through LlamaIndex's own logs and "
    "instrumentation events (its DEBUG log of the top nodes, RetrievalEndEvent): retrieve for "
    "the reader with AizkScopedRetriever(index) in place of index.as_retriever(), which asks "
    "the store only for what the reader may read"
)
"""Where other readers' nodes, withheld here, already went, and the fix (see `report`)."""
_QUESTION_TO_POSTPROCESSOR = (
    "postprocess_nodes takes the nodes a retriever found, not the question: "
    "postprocess_nodes(retriever.retrieve(question), query_str=question)"
)

_NOT_SERIALIZED = ("token_counter", "fit_to")
"""Settings that hold live objects: `to_dict` marks them, `from_dict` needs them passed again."""
BOUND_READER_KEY = "bound_reader"
"""Where `to_dict` writes the reader `for_reader` bound, for `from_dict` to bind it again."""


class AizkEvidencePostprocessor(PackingSettings, BaseNodePostprocessor):
    """Turn retrieved nodes, already in merit order, into the one evidence block a prompt needs.

    Configured and validated like every aizk adapter (see `PackingSettings`). `token_counter` is
    a Python callable, so `to_dict`/`to_json` leave it out: pass it again to `from_dict`, or the
    restored postprocessor counts with `chars_per_token`.

    The settings cannot be reassigned after construction (LlamaIndex's `callback_manager` still
    can, because query engines set it). The instance keeps no per-call state, so one instance can
    serve concurrent queries: the reader is `directory`, or the one named by `reading_as` for
    the request in hand.
    """

    # Unknown settings are refused by PackingSettings' own `extra="forbid"`.
    model_config = ConfigDict(arbitrary_types_allowed=True)

    return_nodes: bool = Field(
        default=False,
        strict=True,
        description=(
            "Return the kept, authorized nodes (new nodes with public metadata) instead of one "
            "block node, for pipelines that format nodes themselves."
        ),
    )
    fit_to: FitTarget | None = Field(
        default=None,
        exclude=True,
        description=(
            "Size each call's budget to the room the model's window leaves for the block, as "
            "LlamaIndex's own prompt helper works it out, so the block is sent whole in one "
            "call. Give it the response synthesizer the engine answers with "
            "(get_response_synthesizer(...)): the room is then that synthesizer's, under its "
            "prompt helper (Settings.context_window and num_output included) and its own "
            "templates. Given an LLM, the room is the least under LlamaIndex's default prompts "
            "across the response modes. Needs budget_covers='block'; counts with LlamaIndex's "
            "tokenizer unless token_counter says otherwise."
        ),
    )

    @model_validator(mode="after")
    def _fitting_counts_the_whole_block(self) -> AizkEvidencePostprocessor:
        if self.fit_to is not None and self.budget_covers != "block":
            raise ValueError(
                "fit_to promises the block fits the room the model leaves, which only a budget "
                "on the whole block can keep: set budget_covers='block'"
            )
        if self.fit_to is not None:
            check_fit_target(self.fit_to)
        return self

    _bound: ScopeDirectory | None = PrivateAttr(default=None)

    @classmethod
    def class_name(cls) -> str:
        return "AizkEvidencePostprocessor"

    def for_reader(self, directory: ScopeDirectory) -> AizkEvidencePostprocessor:
        """This postprocessor bound to one reader: the recommended way to name a request's reader.

        A cheap copy sharing every setting, made per request and handed to the engine
        (`index.as_query_engine(node_postprocessors=[evidence.for_reader(sam)])`): the reader is
        then part of the engine, whatever thread, task or stream runs it, where `reading_as`
        reaches only code running in its context. A bound reader comes before `reading_as`,
        which comes before `directory`.
        """
        if not isinstance(directory, ScopeDirectory):
            raise TypeError(
                "for_reader needs a ScopeDirectory (a request may switch readers but not switch "
                f"authorization off), not {type(directory).__name__}"
            )
        bound = self.model_copy()
        bound._bound = directory
        return bound

    def __setstate__(self, state: dict[str, Any]) -> None:
        # LlamaIndex's own rebuilds the fields through `__init__`, which drops private
        # attributes: a copy bound to a reader, unpickled in a process pool, would answer as
        # nobody. The bound reader is put back.
        super().__setstate__(state)
        self._bound = (state.get("__pydantic_private__") or {}).get("_bound")

    def __setattr__(self, name: str, value: Any) -> None:
        # Pydantic would accept `budget = 10**6` silently, and even with validate_assignment it
        # keeps the bad value when the cross-field check fails. A shared instance must not change
        # rules under a concurrent query, so the settings are fixed once validated.
        self._refuse_change(name)
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        self._refuse_change(name)
        super().__delattr__(name)

    def _refuse_change(self, name: str) -> None:
        if name in type(self).model_fields and name != "callback_manager":
            raise AttributeError(
                f"{name} is fixed when the postprocessor is built; create a new "
                f"{type(self).__name__} with the setting you want"
            )

    def postprocess_nodes(
        self,
        nodes: list[NodeWithScore],
        query_bundle: QueryBundle | None = None,
        query_str: str | None = None,
    ) -> list[NodeWithScore]:
        """Pack the nodes in the order given, for the reader of the call (see `reader_of`).

        LlamaIndex's own entry point, but for what it hands on: its instrumentation opens a
        span around `_postprocess_nodes` that records the arguments, and the nodes handed over
        hold other readers' text on a path that did not scope retrieval. They travel boxed
        (`Handed`), so the span records how many there were; its result is the reader's own.
        """
        if query_str is not None and query_bundle is not None:
            raise ValueError("Cannot specify both query_str and query_bundle")
        if query_str is not None:
            query_bundle = QueryBundle(query_str)
        return self._postprocess_nodes(Handed(nodes), query_bundle)

    def _postprocess_nodes(
        self,
        nodes: list[NodeWithScore] | Handed,
        query_bundle: QueryBundle | None = None,
    ) -> list[NodeWithScore]:
        """Pack the nodes in the order given; the query plays no part in what is kept."""
        if isinstance(nodes, Handed):
            nodes = nodes.nodes
        expect_sequence(nodes, NODES.expected, _QUESTION_TO_POSTPROCESSOR)
        limits = call_limits(self, query_bundle)
        packing = run(nodes, NODES, self, reader=reader_of(self), **limits)
        return packed_nodes(self, packing)

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        """The settings as a dict, and the reader `for_reader` bound (`bound_reader`), which a
        restored copy must answer as; a token counter or what `fit_to` fits, being live
        objects, is marked rather than written."""
        data = super().to_dict(**kwargs)
        for name in _NOT_SERIALIZED:
            if getattr(self, name) is not None:
                data[f"{name}_not_serialized"] = True
        if self._bound is not None:
            data[BOUND_READER_KEY] = self._bound.model_dump(mode="json")
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], **kwargs: Any) -> AizkEvidencePostprocessor:
        """Rebuild from `to_dict`; a postprocessor that had a token counter or a `fit_to`
        needs it again.

        Restoring it without one would count differently, or stop fitting the model's window,
        without a word, so it is an error.
        """
        data = dict(data)
        for name in _NOT_SERIALIZED:
            if data.pop(f"{name}_not_serialized", False) and kwargs.get(name) is None:
                raise ValueError(
                    f"this postprocessor was saved with a {name}, which is a live object and "
                    f"is not serialized; pass it again: "
                    f"AizkEvidencePostprocessor.from_dict(data, {name}=...)"
                )
        bound = data.pop(BOUND_READER_KEY, None)
        restored: AizkEvidencePostprocessor = super().from_dict(data, **kwargs)
        return restored if bound is None else restored.for_reader(ScopeDirectory(**bound))

    async def _apostprocess_nodes(
        self,
        nodes: list[NodeWithScore],
        query_bundle: QueryBundle | None = None,
    ) -> list[NodeWithScore]:
        """The sync path, run in place: packing never waits on I/O, so a thread buys nothing."""
        return self._postprocess_nodes(Handed(nodes), query_bundle)


class Handed:
    """The nodes handed to one call, as a tracing span records them: how many, not what they
    say (they may be other readers'). Not a sequence, so no serializer walks into it."""

    __slots__ = ("nodes",)

    def __init__(self, nodes: list[NodeWithScore]) -> None:
        self.nodes = nodes

    def __repr__(self) -> str:
        count = len(self.nodes) if isinstance(self.nodes, Sized) else "?"
        return f"<{count} nodes handed to the packer>"


class CallLimits(TypedDict):
    """A call's own budget and token counter, as `run` takes them: `None` keeps the settings'."""

    budget: int | None
    counter: TokenCounter | None


def reader_of(evidence: AizkEvidencePostprocessor) -> ScopeDirectory | None:
    """The reader of a call made now: the one bound to `evidence`, else `reading_as`'s, else
    its `directory`."""
    return evidence._bound or current_reader() or evidence.directory


def call_limits(
    evidence: AizkEvidencePostprocessor, query_bundle: QueryBundle | None
) -> CallLimits:
    """The budget and counter one call packs with: the settings', unless `fit_to` sizes the
    budget to the room the model's window leaves for this query.

    Worked out once per call, before any node is read, so a walk that scoped retrieval feeds
    page by page packs to the same budget as one handed every node at once. The room is
    counted in LlamaIndex's tokenizer, the one its prompt helper splits contexts with, and so
    is the whole block, unless a `token_counter` was given; the block is counted as the
    prompts it goes into show it.
    """
    if evidence.fit_to is None:
        return CallLimits(budget=None, counter=None)
    room = room_for_block(evidence.fit_to, query_bundle.query_str if query_bundle else "")
    if room < 1:  # packed all the same, to a budget of 0: the counts still travel
        logger.warning(
            "aizk: %s's context window leaves no room for evidence under this "
            "engine's prompt and query; the query gets none",
            type(model_of(evidence.fit_to)).__name__,
        )
    counter = evidence.token_counter or counter_from_llama_index(get_tokenizer())
    return CallLimits(
        budget=min(room, evidence.budget), counter=counted_as_shown(evidence.fit_to, counter)
    )


def packed_nodes(
    evidence: AizkEvidencePostprocessor, packing: Packing[NodeWithScore]
) -> list[NodeWithScore]:
    """What a packing hands on: its report and event sent, then the one block node, the kept
    nodes (`return_nodes`), or nothing when nothing was kept.

    The postprocessor and scoped retrieval with `evidence` both finish a call here, so a query
    engine tells its logs and tracing handlers the same thing whichever of them packed.
    """
    report(packing, logger, PER_REQUEST, evidence.scopes_key, THROUGH_RETRIEVAL)
    _dispatcher.event(AizkEvidencePacked(counts=packing.counts))
    if not packing.kept:
        return []
    if evidence.return_nodes:
        return kept_nodes(packing, evidence.citation_keys)
    return [block_node(packing)]
