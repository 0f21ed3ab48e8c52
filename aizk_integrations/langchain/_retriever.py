"""`AizkEvidenceRetriever`: any retriever, packed for the request's reader."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import ConfigurableFieldSpec, RunnableConfig, patch_config
from pydantic import Field

from aizk_integrations.langchain._compressor import AizkEvidenceCompressor
from aizk_integrations.langchain._config import CONFIG_SPECS, carrying, current_config


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
        with carrying(config):
            return super().invoke(input, config, **kwargs)

    async def ainvoke(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        with carrying(config):
            return await super().ainvoke(input, config, **kwargs)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        config = current_config()
        child = patch_config(config, callbacks=run_manager.get_child())
        documents = self.base_retriever.invoke(query, child, **kwargs)
        return list(self.compressor.compress_documents(documents, query, run_manager.get_child()))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        config = current_config()
        child = patch_config(config, callbacks=run_manager.get_child())
        documents = await self.base_retriever.ainvoke(query, child, **kwargs)
        compressed = await self.compressor.acompress_documents(
            documents, query, run_manager.get_child()
        )
        return list(compressed)
