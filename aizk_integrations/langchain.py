"""The LangChain adapter: retrieved `Document`s in, one evidence block out.

`AizkEvidenceCompressor` is a `BaseDocumentCompressor`, so it drops into
`ContextualCompressionRetriever` and `DocumentCompressorPipeline`, and `as_runnable()` gives the
same packer as an LCEL step whose output fills a prompt's `{context}`. `AizkEvidenceRetriever`
wraps any retriever with it and carries each request's config to it, wherever it is invoked.
The documents are taken to be in merit order already (retrieved, perhaps reranked): the packer
never reorders, it only decides where to stop, so the query is not needed to pack.

One app usually serves many readers, so each request names its reader in its config
(`config={"configurable": {"aizk_directory": reader}}`). The packer reads that config wherever
LangChain carries one: in an LCEL chain, a retriever tool, a LangGraph node, `batch`. Where
LangChain carries none (a bare `ContextualCompressionRetriever.invoke`), the call has no reader
and fails closed: only evidence that names no scope is shown.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Final

from pydantic import ConfigDict, Field

from aizk_integrations._errors import ItemError, naming_items, quoted
from aizk_integrations._packing import Packing
from aizk_integrations._result import kept_item_metadata
from aizk_integrations._rows import Row
from aizk_integrations._scopes import ScopeDirectory
from aizk_integrations._settings import PackingSettings

try:
    from langchain_core.callbacks import (
        AsyncCallbackManagerForRetrieverRun,
        CallbackManager,
        CallbackManagerForChainRun,
        CallbackManagerForRetrieverRun,
        Callbacks,
    )
    from langchain_core.documents import BaseDocumentCompressor, Document
    from langchain_core.language_models import BaseChatModel, BaseLanguageModel
    from langchain_core.prompts import BasePromptTemplate
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import (
        ConfigurableFieldSpec,
        Runnable,
        RunnableConfig,
        RunnableSerializable,
        ensure_config,
        patch_config,
    )
except ImportError as error:
    raise ImportError(
        "aizk_integrations.langchain needs LangChain (langchain-core); install it with "
        f'pip install "aizk-integrations[langchain]" ({error})'
    ) from error

__all__ = [
    "BUDGET_CONFIG_KEY",
    "COUNTS_METADATA_KEY",
    "DIRECTORY_CONFIG_KEY",
    "RECALL_METADATA_KEY",
    "ROOM_CONFIG_KEY",
    "AizkEvidenceCompressor",
    "AizkEvidenceRetriever",
    "context_room",
]

logger = logging.getLogger(__name__)

BUDGET_CONFIG_KEY: Final = "aizk_budget"
"""`configurable` key: this request's token budget (an int from 1 to `max_budget`)."""

DIRECTORY_CONFIG_KEY: Final = "aizk_directory"
"""`configurable` key: this request's reader, a `ScopeDirectory`."""

ROOM_CONFIG_KEY: Final = "aizk_room"
"""`configurable` key: the tokens the model's window leaves for the block (`context_room`); the
request packs to the smaller of this and its budget, and 0 keeps nothing."""

RECALL_METADATA_KEY: Final = "aizk_recall"
"""Metadata key of the block `Document` holding the public `RecallResult` JSON."""

COUNTS_METADATA_KEY: Final = "aizk_counts"
"""Metadata key of the block `Document` holding kept, cut-by-budget, withheld, tokens, budget."""

CONFIG_SPECS: Final = (
    ConfigurableFieldSpec(
        id=DIRECTORY_CONFIG_KEY,
        annotation=ScopeDirectory,
        name="aizk reader",
        description="This request's reader: only evidence in their scopes is shown.",
        default=None,
    ),
    ConfigurableFieldSpec(
        id=BUDGET_CONFIG_KEY,
        annotation=int,
        name="aizk budget",
        description="This request's token budget, from 1 to the packer's max_budget.",
        default=None,
    ),
    ConfigurableFieldSpec(
        id=ROOM_CONFIG_KEY,
        annotation=int,
        name="aizk room",
        description=(
            "The tokens the model's window leaves for the block (context_room): the request "
            "packs to at most this, 0 keeping nothing."
        ),
        default=None,
    ),
)
"""The per-request settings, as LangChain's `config_specs` list them."""

_KNOWN = frozenset(spec.id for spec in CONFIG_SPECS)
_KNOWN_KEYS = ", ".join(repr(spec.id) for spec in CONFIG_SPECS)
_PER_REQUEST = (
    f"pass this request's reader as config={{'configurable': {{{DIRECTORY_CONFIG_KEY!r}: "
    "directory}} (LangChain hands no config to a compressor inside a bare "
    "ContextualCompressionRetriever: use AizkEvidenceRetriever there)"
)

_request_config: ContextVar[RunnableConfig | None] = ContextVar("aizk_request_config", default=None)
"""The config of the `AizkEvidenceRetriever` call in progress, for the compressor it wraps."""


class AizkEvidenceCompressor(PackingSettings, BaseDocumentCompressor):
    """Pack retrieved documents into aizk's evidence block, within a budget and for one reader.

    The settings (budget, reader directory, metadata key names, token counter) are validated
    here, when the compressor is built, so a misconfigured chain fails at startup rather than on
    the first request. The model is frozen so that stays true: pydantic's assignment validation
    would keep a value that breaks a cross-field rule (budget over `max_budget`) even as it
    raises. Build a new compressor to change a setting, or change budget and reader per request
    through the config.
    """

    # Unknown settings are refused by PackingSettings' own `extra="forbid"`.
    model_config = ConfigDict(frozen=True)

    return_documents: bool = Field(
        default=False,
        strict=True,
        description=(
            "Return the kept, authorized documents (new Documents whose metadata is only "
            "their public provenance, scope names and resource URI) instead of one block "
            "Document, for apps that render citations themselves."
        ),
    )

    def compress_documents(
        self,
        documents: Sequence[Document],
        query: str,
        callbacks: Callbacks | None = None,
    ) -> Sequence[Document]:
        """Pack `documents` in the order given, for the reader of the request in progress.

        Returns one `Document` holding the markdown block, or the kept documents when
        `return_documents` is set, or `[]` when nothing is kept: an empty block would only put
        an empty scaffold into the prompt. The request's budget and reader come from the
        runnable config LangChain carries (see the module's docstring); `query` is not needed.
        """
        packing = self._pack_documents(documents, _current_config(), callbacks)
        if not packing.kept:
            return []
        if self.return_documents:
            return [self._kept_document(documents[row.position], row) for row in packing.kept]
        return [
            Document(
                page_content=packing.block(),
                metadata={
                    RECALL_METADATA_KEY: packing.public_json(),
                    COUNTS_METADATA_KEY: packing.counts,
                },
            )
        ]

    def _kept_document(self, original: Document, row: Row) -> Document:
        """A new `Document` for one kept item: its public fields, its id and the citation keys."""
        metadata = kept_item_metadata(row)
        metadata.update(
            (key, original.metadata[key])
            for key in self.citation_keys
            if key in original.metadata and key not in metadata
        )
        return Document(id=original.id, page_content=row.text, metadata=metadata)

    async def acompress_documents(
        self,
        documents: Sequence[Document],
        query: str,
        callbacks: Callbacks | None = None,
    ) -> Sequence[Document]:
        """The sync result, computed inline.

        Packing is a few microseconds of CPU per kept item, so handing it to a thread pool (the
        base class's default) would cost more than the work and gain nothing.
        """
        return self.compress_documents(documents, query, callbacks)

    def as_runnable(self) -> Runnable[Sequence[Document], str]:
        """This packer as an LCEL step from a list of documents to the block string.

        `retriever | packer.as_runnable()` fills a prompt's `{context}` directly; nothing kept
        gives `""`. A request changes its budget or reader without rebuilding the chain through
        `config={"configurable": {...}}`:

        * `"aizk_budget"` (`BUDGET_CONFIG_KEY`): an int from 1 to `max_budget`;
        * `"aizk_room"` (`ROOM_CONFIG_KEY`): what `context_room` gives, an int >= 0; the call
          packs to the smaller of it and the budget;
        * `"aizk_directory"` (`DIRECTORY_CONFIG_KEY`): a `ScopeDirectory`, the reader of this call.

        A call can switch readers but never switch authorization off, so the directory key takes
        a `ScopeDirectory` only; leave it out to use the compressor's own `directory`. The step
        declares its types (documents in, text out), so `get_input_jsonschema()` and
        `(retriever | step).as_tool(...)` work, and it pickles with the compressor.
        """
        return AizkEvidenceBlock(compressor=self)

    def _pack_documents(
        self,
        documents: Sequence[Document],
        config: RunnableConfig,
        callbacks: Callbacks | None = None,
    ) -> Packing:
        """Run the shared packer over `documents`, as a traced run of its own when traced.

        The run is named after the compressor and its outputs are the counts, so a trace shows
        why a block is empty or short even when nothing is returned. LangChain decides whether
        a call is traced (callbacks passed or in the config, LangSmith switched on by
        environment variables, `tracing_v2_enabled` or `collect_runs` around the call); a call
        nothing would see skips the run.
        """
        handlers = callbacks if callbacks is not None else config.get("callbacks")
        manager = CallbackManager.configure(inheritable_callbacks=handlers)
        if not manager.handlers:
            return self._packed(documents, config)
        count = len(documents) if isinstance(documents, Sequence) else None
        run = manager.on_chain_start(
            None, {"documents": count}, name=type(self).__name__, run_type="parser"
        )
        try:
            packing = self._packed(documents, config)
        except BaseException as error:
            run.on_chain_error(error)
            raise
        run.on_chain_end({COUNTS_METADATA_KEY: packing.counts})
        return packing

    def _packed(self, documents: Sequence[Document], config: RunnableConfig) -> Packing:
        """Run the shared packer over `documents`, reading them lazily up to the cut."""
        budget, reader = self._call_settings(config)
        with naming_items(lambda position, authorized: _name(documents, position, authorized)):
            packing = self._pack(
                documents,
                _metadata_of,
                _page_content_of,
                expected="a list (or other sequence) of langchain_core Documents",
                budget=budget,
                reader=reader,
            )
        self._report(packing, logger, _PER_REQUEST)
        return packing

    def _call_settings(self, config: RunnableConfig) -> tuple[int | None, ScopeDirectory | None]:
        """Read and check a request's `configurable` settings; absent keys mean "as built"."""
        configurable: Mapping[str, Any] = config.get("configurable") or {}
        for key in configurable:
            if key.startswith("aizk_") and key not in _KNOWN:
                raise ValueError(
                    f"configurable {quoted(key)} is not an aizk setting; known keys: {_KNOWN_KEYS}"
                )
        budget = configurable.get(BUDGET_CONFIG_KEY)
        if budget is not None:
            try:
                budget = self._call_budget(budget)
            except (TypeError, ValueError) as error:
                raise type(error)(f"configurable {BUDGET_CONFIG_KEY!r}: {error}") from None
        room = configurable.get(ROOM_CONFIG_KEY)
        if room is not None:
            # A ceiling the window sets, not a budget asked for: above max_budget it simply
            # does not bind, and 0 (no room at all) keeps nothing.
            if isinstance(room, bool) or not isinstance(room, int) or room < 0:
                raise TypeError(
                    f"configurable {ROOM_CONFIG_KEY!r} must be an int >= 0 (the tokens "
                    f"context_room gives), not {quoted(room)}"
                )
            budget = min(self.budget if budget is None else budget, room)
        if DIRECTORY_CONFIG_KEY not in configurable:
            return budget, None
        directory = configurable[DIRECTORY_CONFIG_KEY]
        if not isinstance(directory, ScopeDirectory):
            raise TypeError(
                f"configurable {DIRECTORY_CONFIG_KEY!r} must be a ScopeDirectory (a call may "
                f"switch readers but not switch authorization off), "
                f"not {type(directory).__name__}"
            )
        return budget, directory


class AizkEvidenceBlock(RunnableSerializable[Sequence[Document], str]):
    """A compressor as an LCEL step: documents in, the block's text out (`as_runnable()`)."""

    compressor: AizkEvidenceCompressor

    @property
    def InputType(self) -> type[list[Document]]:  # noqa: N802  # LangChain's name
        return list[Document]

    @property
    def OutputType(self) -> type[str]:  # noqa: N802  # LangChain's name
        return str

    @property
    def config_specs(self) -> list[ConfigurableFieldSpec]:
        """The per-request settings, as LangChain lists a runnable's configurable fields."""
        return list(CONFIG_SPECS)

    def invoke(
        self, input: Sequence[Document], config: RunnableConfig | None = None, **kwargs: Any
    ) -> str:
        return self._call_with_config(self._block, input, config)

    async def ainvoke(
        self, input: Sequence[Document], config: RunnableConfig | None = None, **kwargs: Any
    ) -> str:
        # Packing never waits on I/O, so the sync path runs in place.
        return self.invoke(input, config)

    def _block(
        self,
        documents: Sequence[Document],
        run_manager: CallbackManagerForChainRun,  # LangChain's calling convention; unused
        config: RunnableConfig,
    ) -> str:
        # `config` is this run's child config: the packer's own run nests under the step's.
        return self.compressor._pack_documents(documents, config).block()


class AizkEvidenceRetriever(BaseRetriever):
    """Any retriever, packed for the request's reader: a `ContextualCompressionRetriever` that
    carries the config.

    LangChain's `ContextualCompressionRetriever` hands its compressor no config, so invoked on
    its own (`retriever.invoke(question, config=...)`) the compressor never learns the reader,
    and fails closed. This retriever passes its config on, so the same call works wherever it
    is made: on its own, in a chain, in a retriever tool.
    """

    base_retriever: BaseRetriever = Field(description="Retrieves, and ranks, the documents.")
    compressor: AizkEvidenceCompressor = Field(
        default_factory=AizkEvidenceCompressor, description="Packs them for the request."
    )

    @property
    def config_specs(self) -> list[ConfigurableFieldSpec]:
        """The per-request settings, as LangChain lists a runnable's configurable fields."""
        return [*self.base_retriever.config_specs, *CONFIG_SPECS]

    def invoke(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        with _carrying(config):
            return super().invoke(input, config, **kwargs)

    async def ainvoke(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        with _carrying(config):
            return await super().ainvoke(input, config, **kwargs)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        config = _current_config()
        child = patch_config(config, callbacks=run_manager.get_child())
        documents = self.base_retriever.invoke(query, child, **kwargs)
        return list(self.compressor.compress_documents(documents, query, run_manager.get_child()))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        config = _current_config()
        child = patch_config(config, callbacks=run_manager.get_child())
        documents = await self.base_retriever.ainvoke(query, child, **kwargs)
        compressed = await self.compressor.acompress_documents(
            documents, query, run_manager.get_child()
        )
        return list(compressed)


def context_room(
    model: BaseLanguageModel[Any],
    prompt: BasePromptTemplate[Any],
    *,
    context: str = "context",
    window: int | None = None,
    reserve: int = 0,
    **values: Any,
) -> int:
    """The tokens `model` leaves for the evidence block in `prompt`, filled with `values`.

    The model's input window (`window`, or its profile's `max_input_tokens`), less the prompt
    itself with every other value in place and an empty `{context}`, counted by the model, less
    `reserve` (for the answer, when the window counts it too). Pass the result as the request's
    `aizk_room`, with whole-block budgets counted by the same model, and the block fits the
    prompt whole: the request packs to the smaller of the room and the packer's budget::

        packer = AizkEvidenceCompressor(
            budget_covers="block", token_counter=counter_from_langchain(model)
        )
        room = context_room(model, prompt, question=question)
        chain.invoke(question, config={"configurable": {"aizk_room": room}})

    A prompt that leaves no room gives 0, with a WARNING: the request then keeps nothing.
    """
    profile = getattr(model, "profile", None) or {}
    limit = window if window is not None else profile.get("max_input_tokens")
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise ValueError(
            f"{type(model).__name__} does not say how many input tokens it takes (no "
            "profile['max_input_tokens']); pass window=<its context window>"
        )
    filled = prompt.format_prompt(**{context: "", **values})
    if isinstance(model, BaseChatModel):
        used = model.get_num_tokens_from_messages(filled.to_messages())
    else:
        used = model.get_num_tokens(filled.to_string())
    room = limit - used - reserve - _BOUNDARY_SLACK
    if room < 1:
        logger.warning(
            "aizk: %s's window of %d tokens leaves no room for evidence in this prompt "
            "(the prompt takes %d, %d are reserved)",
            type(model).__name__,
            limit,
            used,
            reserve,
        )
        return 0
    return room


_BOUNDARY_SLACK = 8
"""Tokens kept back for where the block meets the prompt's own text: a tokenizer may count a
few more there than the two parts alone."""


@contextmanager
def _carrying(config: RunnableConfig | None) -> Iterator[None]:
    """Make `config` the request config of what runs inside, for `_current_config`."""
    token = _request_config.set(ensure_config(config))
    try:
        yield
    finally:
        _request_config.reset(token)


def _current_config() -> RunnableConfig:
    """The config of the request in progress: an `AizkEvidenceRetriever` call's, or the one
    LangChain carries for the runnable in progress (empty outside any)."""
    return _request_config.get() or ensure_config()


def _metadata_of(document: object, position: int) -> object:
    if not isinstance(document, Document):
        raise ItemError(
            position,
            f"expected a langchain_core Document, got {type(document).__name__}",
            authorized=False,
        )
    return document.metadata


def _page_content_of(document: Document, position: int) -> object:
    return document.page_content


def _name(documents: Sequence[Document], position: int, authorized: bool) -> str:
    """How an error names a document: its index, and its id once it is known to be readable."""
    name = f"documents[{position}]"
    identifier = documents[position].id if authorized else None  # authorized: a Document
    return f"{name} (id {quoted(identifier)})" if identifier else name
