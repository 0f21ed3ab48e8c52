"""`AizkEvidenceRetriever`: any retriever, packed for the request's reader."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import RetrieverLike
from langchain_core.runnables import ConfigurableFieldSpec, RunnableConfig, patch_config
from pydantic import Field, field_validator

from aizk_integrations._scopes.directory import ScopeDirectory
from aizk_integrations.langchain._compressor import AizkEvidenceCompressor, returned
from aizk_integrations.langchain._config import (
    CONFIG_SPECS,
    ConfigCarryingRetriever,
    current_config,
    request_reader,
    with_reader,
)
from aizk_integrations.langchain._pipeline import check_not_packed, refuse_packed_twice
from aizk_integrations.langchain._scoped import apacked_retrieval, packed_retrieval


class AizkEvidenceRetriever(ConfigCarryingRetriever):
    """Any retriever, packed for the request's reader: a `ContextualCompressionRetriever` that
    carries the config.

    LangChain's `ContextualCompressionRetriever` hands its compressor no config, so invoked on
    its own (`retriever.invoke(question, config=...)`) the compressor never learns the reader,
    and fails closed. This retriever passes its config on, so the same call works wherever it
    is made: on its own, in a chain, in a retriever tool. The base retriever sees the same
    reader (the request's, else the compressor's `reader`), so a reader-aware retriever
    and the packer agree; over an `AizkScopedRetriever` the store is asked for more documents
    only while the packer still has room.
    """

    base_retriever: RetrieverLike = Field(
        description="Retrieves, and ranks, the documents: any retriever, configurable ones too."
    )
    compressor: AizkEvidenceCompressor = Field(
        default_factory=AizkEvidenceCompressor, description="Packs them for the request."
    )

    @field_validator("base_retriever")
    @classmethod
    def _not_packed(cls, retriever: RetrieverLike) -> RetrieverLike:
        check_not_packed(retriever, cls.__name__)
        return retriever

    @property
    def config_specs(self) -> list[ConfigurableFieldSpec]:
        """The per-request settings, as LangChain lists a runnable's configurable fields."""
        ours = {spec.id for spec in CONFIG_SPECS}
        theirs = [spec for spec in self.base_retriever.config_specs if spec.id not in ours]
        return [*theirs, *CONFIG_SPECS]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        config, reader = self._request(run_manager)
        packer = self.compressor
        packing = packed_retrieval(packer, self.base_retriever, query, config, reader, **kwargs)
        refuse_packed_twice(packing, type(self).__name__)
        return returned(packer, packing)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        config, reader = self._request(run_manager)
        packer = self.compressor
        base = self.base_retriever
        packing = await apacked_retrieval(packer, base, query, config, reader, **kwargs)
        refuse_packed_twice(packing, type(self).__name__)
        return returned(packer, packing)

    def _request(
        self, run_manager: CallbackManagerForRetrieverRun | AsyncCallbackManagerForRetrieverRun
    ) -> tuple[RunnableConfig, ScopeDirectory | None]:
        """This request's config, naming its reader, for what runs under this retriever."""
        config = current_config()
        compressor = self.compressor
        reader = request_reader(config, compressor.reader_of_user) or compressor.reader
        child = patch_config(with_reader(config, reader), callbacks=run_manager.get_child())
        return child, reader
