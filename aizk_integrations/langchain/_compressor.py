"""`AizkEvidenceCompressor`, its LCEL step, and the one traced run every LangChain part packs
documents with."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManager, Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.language_models import BaseLanguageModel
from langchain_core.load.serializable import (
    Serializable,
    SerializedConstructor,
    SerializedNotImplemented,
)
from langchain_core.runnables import (
    ConfigurableFieldSpec,
    RunnableConfig,
    RunnableSerializable,
    ensure_config,
    patch_config,
)
from langchain_core.runnables.config import get_callback_manager_for_config
from pydantic import ConfigDict, Field

from aizk_integrations._counters import counter_from_langchain
from aizk_integrations._run.paging import Fetched
from aizk_integrations._run.report import report
from aizk_integrations._run.run import Packing, expect_sequence, run
from aizk_integrations._run.settings import PackingSettings
from aizk_integrations.langchain._config import (
    CONFIG_SPECS,
    PER_REQUEST,
    THROUGH_COMPRESSION,
    ReaderOfUser,
    current_config,
    request_settings,
)
from aizk_integrations.langchain._documents import (
    COUNTS_METADATA_KEY,
    DOCUMENTS,
    block_document,
    kept_documents,
)

logger = logging.getLogger("aizk_integrations.langchain")

THROUGH_RETRIEVAL = (
    "a retriever that handed them over had already sent their text through LangChain's "
    "callbacks (astream_events, astream_log, LangServe's stream routes, LangSmith traces): "
    "retrieve for the reader with AizkScopedRetriever(vectorstore=store) in place of "
    "store.as_retriever(), which asks the store only for what the reader may read"
)
"""Where other readers' documents, withheld here, already went, and the fix (see `report`)."""
_QUESTION_TO_COMPRESSOR = (
    "compress_documents takes the documents a retriever found, not the question: "
    "compress_documents(retriever.invoke(question), question)"
)
_QUESTION_TO_STEP = (
    "the step takes the documents a retriever found, not the question: put the retriever in "
    "front of it, retriever | packer.as_runnable()"
)


class AizkEvidenceCompressor(PackingSettings, BaseDocumentCompressor, Serializable):
    """Pack retrieved documents into aizk's evidence block, within a budget and for one reader.

    The settings (budget, reader directory, metadata key names, token counter) are validated
    here, when the compressor is built, so a misconfigured chain fails at startup rather than on
    the first request. The model is frozen so that stays true: pydantic's assignment validation
    would keep a value that breaks a cross-field rule (budget over `max_budget`) even as it
    raises. Build a new compressor to change a setting, or change budget and reader per request
    through the config.
    """

    # Unknown settings are refused, as PackingSettings says; said again here because LangChain's
    # Serializable, a base too, would otherwise ignore them.
    model_config = ConfigDict(frozen=True, extra="forbid")

    reader_of_user: ReaderOfUser | None = Field(
        default=None,
        exclude=True,
        description=(
            "For servers that put the authenticated user in each run's config (LangGraph "
            "Platform's 'langgraph_auth_user'): maps that user to their reader (a "
            "ScopeDirectory, or None for none). Set, it is the only source of a request's "
            "reader, so nothing a client sends can choose it."
        ),
    )
    return_documents: bool = Field(
        default=False,
        strict=True,
        description=(
            "Return the kept, authorized documents (new Documents whose metadata is only "
            "their public provenance, scope names and resource URI) instead of one block "
            "Document, for apps that render citations themselves."
        ),
    )

    @classmethod
    def for_model(cls, model: BaseLanguageModel[Any], **settings: Any) -> AizkEvidenceCompressor:
        """The recommended setup: a budget in `model`'s own tokens, paid by the whole block.

        The seed's estimate of four characters a token is cheap but is not what a model counts
        (a budget of 512 was 1.7x that many tokens of English, 5x of Japanese); counted by the
        model and covering labels and headers too, a budget is the model's tokens in any
        language. `settings` are any others, e.g. `budget=1024, reader=reader`.
        """
        return cls(token_counter=counter_from_langchain(model), budget_covers="block", **settings)

    @classmethod
    def is_lc_serializable(cls) -> bool:
        return True

    @classmethod
    def get_lc_namespace(cls) -> list[str]:
        return ["aizk_integrations", "langchain"]

    def to_json(self) -> SerializedConstructor | SerializedNotImplemented:
        """The settings as LangChain's `dumpd` writes a constructor, for `loads` to rebuild.

        A token counter or `reader_of_user` is a live function LangChain cannot write: such a
        compressor is refused, saying what to do instead, rather than written without them and
        rebuilt counting differently or choosing readers differently.
        """
        live = [name for name in ("token_counter", "reader_of_user") if getattr(self, name)]
        if live:
            raise TypeError(
                f"this AizkEvidenceCompressor holds {' and '.join(live)}, a live function "
                "LangChain's dumpd cannot write; pickle the chain instead (it pickles), or "
                "build the compressor in code where the chain is loaded"
            )
        return {
            "lc": 1,
            "type": "constructor",
            "id": [*self.get_lc_namespace(), type(self).__name__],
            "kwargs": self.model_dump(mode="json", exclude_defaults=True),
        }

    def compress_documents(
        self,
        documents: Sequence[Document],
        query: str,
        callbacks: Callbacks | None = None,
    ) -> Sequence[Document]:
        """Pack `documents` in the order given, for the reader of the request in progress.

        Returns one `Document` holding the markdown block, or the kept documents when
        `return_documents` is set, or `[]` when nothing is kept (see `returned`). The request's
        budget and reader come from the runnable config LangChain carries (see the package's
        docstring); `query` is not needed.
        """
        expect_sequence(documents, DOCUMENTS.expected, _QUESTION_TO_COMPRESSOR)
        config = current_config()
        packing = pack_documents(self, documents, config, callbacks, advice=THROUGH_COMPRESSION)
        return returned(self, packing)

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

    def as_runnable(self) -> AizkEvidenceBlock:
        """This packer as an LCEL step from a list of documents to the block string.

        `retriever | packer.as_runnable()` fills a prompt's `{context}` directly; nothing kept
        gives `""`. A request changes its budget or reader without rebuilding the chain through
        `config={"configurable": {...}}`:

        * `"aizk_budget"` (`BUDGET_CONFIG_KEY`): an int from 1 to `max_budget`;
        * `"aizk_room"` (`ROOM_CONFIG_KEY`): what `context_room` gives, an int >= 0; the call
          packs to the smaller of it and the budget;
        * `"aizk_reader"` (`READER_CONFIG_KEY`): a `ScopeDirectory`, the reader of this call.

        A call can switch readers but never switch authorization off, so the directory key takes
        a `ScopeDirectory` only; leave it out to use the compressor's own `directory`. The step
        declares its types (documents in, text out), so `get_input_jsonschema()` and
        `(retriever | step).as_tool(...)` work, and it pickles with the compressor.
        """
        return AizkEvidenceBlock(compressor=self)


class AizkEvidenceBlock(RunnableSerializable[Sequence[Document], str]):
    """A compressor as an LCEL step: documents in, the block's text out."""

    compressor: AizkEvidenceCompressor

    @classmethod
    def is_lc_serializable(cls) -> bool:
        return True

    @classmethod
    def get_lc_namespace(cls) -> list[str]:
        return ["aizk_integrations", "langchain", "_compressor"]  # where `loads` imports it

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
        """The block of `input` for the request `config` names, as a run of its own.

        The run records how many documents it was handed, never the documents: on a path that
        did not scope retrieval they hold other readers' items, which the packer withholds and
        a trace must not copy. Its output is the block, the reader's own evidence.
        """
        expect_sequence(input, DOCUMENTS.expected, _QUESTION_TO_STEP)
        config = ensure_config(config)
        run = get_callback_manager_for_config(config).on_chain_start(
            None,
            {"documents": len(input)},
            name=config.get("run_name") or self.get_name(),
            run_id=config.pop("run_id", None),
        )
        try:
            child = patch_config(config, callbacks=run.get_child())
            block = pack_documents(self.compressor, input, child).result.to_markdown()
        except BaseException as error:
            run.on_chain_error(error)
            raise
        run.on_chain_end(block)
        return block

    async def ainvoke(
        self, input: Sequence[Document], config: RunnableConfig | None = None, **kwargs: Any
    ) -> str:
        # Packing never waits on I/O, so the sync path runs in place.
        return self.invoke(input, config)


def pack_documents(
    compressor: AizkEvidenceCompressor,
    documents: Iterable[Document],
    config: RunnableConfig,
    callbacks: Callbacks | None = None,
    fetched: Fetched | None = None,
    *,
    advice: str = PER_REQUEST,
) -> Packing[Document]:
    """Pack `documents` for the request `config` names, as a traced run of its own when traced.

    `advice` is how a warning tells this call's user to name the reader (`compress_documents`
    is how LangChain's ContextualCompressionRetriever calls, which drops the config).

    The run is named after the compressor and its outputs are the counts, so a trace shows
    why a block is empty or short even when nothing is returned. LangChain decides whether
    a call is traced (callbacks passed or in the config, LangSmith switched on by
    environment variables, `tracing_v2_enabled` or `collect_runs` around the call); a call
    nothing would see skips the run.
    """
    handlers = callbacks if callbacks is not None else config.get("callbacks")
    manager = CallbackManager.configure(inheritable_callbacks=handlers)
    if not manager.handlers:
        return _packed(compressor, documents, config, fetched, advice)
    count = len(documents) if isinstance(documents, Sequence) else None
    traced = manager.on_chain_start(
        None, {"documents": count}, name=type(compressor).__name__, run_type="parser"
    )
    try:
        packing = _packed(compressor, documents, config, fetched, advice)
    except BaseException as error:
        traced.on_chain_error(error)
        raise
    traced.on_chain_end({COUNTS_METADATA_KEY: packing.counts})
    return packing


def returned(compressor: AizkEvidenceCompressor, packing: Packing[Document]) -> list[Document]:
    """What a compressor returns for a packing: one block `Document`, the kept documents when
    `return_documents` is set, or `[]` when nothing is kept (an empty block would only put an
    empty scaffold into the prompt)."""
    if not packing.kept:
        return []
    if compressor.return_documents:
        return kept_documents(packing, compressor.citation_keys)
    return [block_document(packing)]


def _packed(
    compressor: AizkEvidenceCompressor,
    documents: Iterable[Document],
    config: RunnableConfig,
    fetched: Fetched | None,
    advice: str,
) -> Packing[Document]:
    budget, reader = request_settings(compressor, config)
    packing = run(documents, DOCUMENTS, compressor, budget=budget, reader=reader, fetched=fetched)
    report(packing, logger, advice, compressor.scopes_key, THROUGH_RETRIEVAL)
    return packing
