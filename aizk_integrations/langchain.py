"""The LangChain adapter: retrieved `Document`s in, one evidence block out.

`AizkEvidenceCompressor` is a `BaseDocumentCompressor`, so it drops into
`ContextualCompressionRetriever` and `DocumentCompressorPipeline`, and `as_runnable()` gives the
same packer as an LCEL step whose output fills a prompt's `{context}`. The documents are taken
to be in merit order already (retrieved, perhaps reranked): the packer never reorders, it only
decides where to stop, so the query is not needed to pack.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Final

from pydantic import ConfigDict, Field

from aizk_integrations._errors import ItemError, naming_items, quoted
from aizk_integrations._packing import Packing
from aizk_integrations._result import kept_item_metadata
from aizk_integrations._scopes import ScopeDirectory
from aizk_integrations._settings import PackingSettings

try:
    from langchain_core.callbacks import Callbacks
    from langchain_core.documents import BaseDocumentCompressor, Document
    from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
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
    "AizkEvidenceCompressor",
]

logger = logging.getLogger(__name__)

BUDGET_CONFIG_KEY: Final = "aizk_budget"
"""`configurable` key of `as_runnable()`: this call's token budget (int, 1 to `max_budget`)."""

DIRECTORY_CONFIG_KEY: Final = "aizk_directory"
"""`configurable` key of `as_runnable()`: this call's reader, a `ScopeDirectory`."""

RECALL_METADATA_KEY: Final = "aizk_recall"
"""Metadata key of the block `Document` holding the public `RecallResult` JSON."""

COUNTS_METADATA_KEY: Final = "aizk_counts"
"""Metadata key of the block `Document` holding kept, cut-by-budget, withheld, tokens, budget."""


class AizkEvidenceCompressor(PackingSettings, BaseDocumentCompressor):
    """Pack retrieved documents into aizk's evidence block, within a budget and for one reader.

    The settings (budget, reader directory, metadata key names, token counter) are validated
    here, when the compressor is built, so a misconfigured chain fails at startup rather than on
    the first request. The model is frozen so that stays true: pydantic's assignment validation
    would keep a value that breaks a cross-field rule (budget over `max_budget`) even as it
    raises. Build a new compressor to change a setting, or change budget and reader per call
    through `as_runnable()`.
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, frozen=True)

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
        """Pack `documents` in the order given; `query` and `callbacks` are not needed.

        Returns one `Document` holding the markdown block, or the kept documents when
        `return_documents` is set, or `[]` when nothing is kept: an empty block would only put
        an empty scaffold into the prompt. LangChain hands a compressor no config, so this uses
        the settings it was built with; per-request budget and reader go through `as_runnable()`.
        """
        packing = self._pack_documents(documents, budget=None, reader=None)
        if not packing.kept:
            return []
        if self.return_documents:
            return [
                Document(page_content=row.text, metadata=kept_item_metadata(row))
                for row in packing.kept
            ]
        return [
            Document(
                page_content=packing.block(),
                metadata={
                    RECALL_METADATA_KEY: packing.public_json(),
                    COUNTS_METADATA_KEY: packing.counts,
                },
            )
        ]

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
        * `"aizk_directory"` (`DIRECTORY_CONFIG_KEY`): a `ScopeDirectory`, the reader of this call.

        A call can switch readers but never switch authorization off, so the directory key takes
        a `ScopeDirectory` only; leave it out to use the compressor's own `directory`.
        """

        def block(documents: Sequence[Document], config: RunnableConfig) -> str:
            budget, reader = self._call_settings(config)
            return self._pack_documents(documents, budget=budget, reader=reader).block()

        async def ablock(documents: Sequence[Document], config: RunnableConfig) -> str:
            return block(documents, config)

        return RunnableLambda(block, afunc=ablock, name=type(self).__name__)

    def _call_settings(self, config: RunnableConfig) -> tuple[int | None, ScopeDirectory | None]:
        """Read and check this call's `configurable` overrides; absent keys mean "as built"."""
        configurable: Mapping[str, Any] = config.get("configurable") or {}
        budget = configurable.get(BUDGET_CONFIG_KEY)
        if budget is not None:
            try:
                budget = self._call_budget(budget)
            except (TypeError, ValueError) as error:
                raise type(error)(f"configurable {BUDGET_CONFIG_KEY!r}: {error}") from None
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

    def _pack_documents(
        self,
        documents: Sequence[Document],
        *,
        budget: int | None,
        reader: ScopeDirectory | None,
    ) -> Packing:
        """Run the shared packer over `documents`, reading them lazily up to the cut."""
        with naming_items(lambda position: _document_name(documents, position)):
            packing = self._pack(
                documents, _metadata_of, _page_content_of, budget=budget, reader=reader
            )
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("aizk evidence cut:\n%s", packing.table())
        return packing


def _metadata_of(document: object, position: int) -> object:
    if not isinstance(document, Document):
        raise ItemError(
            position, f"expected a langchain_core Document, got {type(document).__name__}"
        )
    return document.metadata


def _page_content_of(document: Document, position: int) -> object:
    return document.page_content


def _document_name(documents: Sequence[Document], position: int) -> str:
    """How an error names a document: its index, and its id when it has one."""
    identifier = getattr(documents[position], "id", None)
    name = f"documents[{position}]"
    return f"{name} (id {quoted(identifier)})" if identifier else name
