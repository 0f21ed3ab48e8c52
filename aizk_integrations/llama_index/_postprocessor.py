"""`AizkEvidencePostprocessor`: the retrieved nodes in, one evidence block node out."""

from __future__ import annotations

import logging
from typing import Any, TypedDict

from llama_index.core.instrumentation import (  # type: ignore[attr-defined]  # the
    get_dispatcher,  # documented path; the name lives in llama_index_instrumentation
)
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.utils import get_tokenizer
from pydantic import ConfigDict, Field, model_validator

from aizk_integrations._run.report import report
from aizk_integrations._run.run import Packing, expect_sequence, run
from aizk_integrations._run.settings import PackingSettings
from aizk_integrations._scopes.directory import ScopeDirectory, require_reader
from aizk_integrations._tokens import TokenCounter
from aizk_integrations.counters import counter_from_llama_index
from aizk_integrations.llama_index._event import AizkEvidencePackedEvent
from aizk_integrations.llama_index._nodes import NODES, block_node, kept_nodes
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
    "a retriever that handed them over had already sent their text through LlamaIndex's logs and "
    "instrumentation events (its DEBUG log of the top nodes, RetrievalEndEvent): retrieve for "
    "the reader with AizkScopedRetriever(index) in place of index.as_retriever(), which asks "
    "the store only for what the reader may read"
)
"""Where other readers' nodes, withheld here, already went, and the fix (see `report`)."""
_QUESTION_TO_POSTPROCESSOR = (
    "postprocess_nodes takes the nodes a retriever found, not the question: "
    "postprocess_nodes(retriever.retrieve(question), query_str=question)"
)

PER_REQUEST = (
    "bind the request's reader with for_reader(reader) on the postprocessor, or on "
    "AizkScopedRetriever"
)
"""How the warnings tell a LlamaIndex user to name a request's reader."""

_NOT_SERIALIZED = ("token_counter", "fit_to")
"""Settings that hold live objects: `to_dict` marks them, `from_dict` needs them passed again."""


class AizkEvidencePostprocessor(PackingSettings, BaseNodePostprocessor):
    """Turn retrieved nodes, already in merit order, into the one evidence block a prompt needs.

    Configured and validated like every aizk adapter (see `PackingSettings`). `token_counter` is
    a Python callable, so `to_dict`/`to_json` leave it out: pass it again to `from_dict`, or the
    restored postprocessor counts with `chars_per_token`.

    The settings cannot be reassigned after construction (LlamaIndex's `callback_manager` still
    can, because query engines set it). The instance keeps no per-call state, so one instance can
    serve concurrent queries; a request's reader is bound with `for_reader`.
    """

    # Unknown settings are refused by PackingSettings' own `extra="forbid"`.
    model_config = ConfigDict(arbitrary_types_allowed=True)

    return_nodes: bool = Field(
        frozen=True,
        default=False,
        strict=True,
        description=(
            "Return the kept, authorized nodes (new nodes with public metadata) instead of one "
            "block node, for pipelines that format nodes themselves."
        ),
    )
    fit_to: FitTarget | None = Field(
        frozen=True,
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

    @classmethod
    def class_name(cls) -> str:
        return "AizkEvidencePostprocessor"

    def for_reader(self, reader: ScopeDirectory) -> AizkEvidencePostprocessor:
        """This postprocessor for one reader: how a request names its reader.

        A cheap copy sharing every setting, made per request and handed to the engine
        (`index.as_query_engine(node_postprocessors=[evidence.for_reader(sam)])`): the reader is
        then part of the engine, whatever thread, task or stream runs it. LlamaIndex hands a
        postprocessor no per-call config, and ambient state would follow whoever pulls a
        stream, so the reader travels with the object instead.
        """
        return self.model_copy(update={"reader": require_reader(reader, "for_reader")})

    def _postprocess_nodes(
        self,
        nodes: list[NodeWithScore],
        query_bundle: QueryBundle | None = None,
    ) -> list[NodeWithScore]:
        """Pack the nodes in the order given; the query plays no part in what is kept."""
        expect_sequence(nodes, NODES.expected, _QUESTION_TO_POSTPROCESSOR)
        limits = call_limits(self, query_bundle)
        packing = run(nodes, NODES, self, reader=self.reader, **limits)
        return packed_nodes(self, packing)

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        """The settings as a dict, the reader included; a token counter or what `fit_to` fits,
        being live objects, is marked rather than written."""
        data = super().to_dict(**kwargs)
        for name in _NOT_SERIALIZED:
            if getattr(self, name) is not None:
                data[f"{name}_not_serialized"] = True
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
        restored: AizkEvidencePostprocessor = super().from_dict(data, **kwargs)
        return restored

    async def _apostprocess_nodes(
        self,
        nodes: list[NodeWithScore],
        query_bundle: QueryBundle | None = None,
    ) -> list[NodeWithScore]:
        """The sync path, run in place: packing never waits on I/O, so a thread buys nothing."""
        return self._postprocess_nodes(nodes, query_bundle)


class CallLimits(TypedDict):
    """A call's own budget and token counter, as `run` takes them: `None` keeps the settings'."""

    budget: int | None
    counter: TokenCounter | None


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
    tell(evidence, packing)
    if not packing.kept:
        return []
    if evidence.return_nodes:
        return kept_nodes(packing, evidence.citation_keys)
    return [block_node(packing)]


def tell(evidence: AizkEvidencePostprocessor, packing: Packing[NodeWithScore]) -> None:
    """What every packing tells: its report to the logs and its event to tracing handlers."""
    report(packing, logger, PER_REQUEST, evidence.scopes_key, THROUGH_RETRIEVAL)
    _dispatcher.event(AizkEvidencePackedEvent(counts=packing.counts))
