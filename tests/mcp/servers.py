"""The recall server made from each framework's retrieval over the shared corpus, and an SDK
client session connected to it in memory (tests/mcp/sdk.py, on either major of the SDK)."""

from __future__ import annotations

from typing import Any

from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import TextNode

from aizk_integrations.langchain import AizkEvidenceCompressor
from aizk_integrations.langchain import AizkScopedRetriever as LangChainScopedRetriever
from aizk_integrations.llama_index import AizkEvidencePostprocessor
from aizk_integrations.mcp import recall_server
from aizk_integrations.mcp._sdk import RecallServer
from tests.mcp.corpus import langchain_store, notes
from tests.mcp.sdk import connected

__all__ = ["FRAMEWORKS", "connected", "llama_index", "made_with"]

FRAMEWORKS = ("langchain", "llama_index")


def llama_index() -> VectorStoreIndex:
    """The corpus in a LlamaIndex vector index, its ids and scopes kept out of the text."""
    keys = ["scopes", "artifact_id", "artifact_content_id"]
    nodes = [
        TextNode(
            text=text,
            metadata=metadata,
            excluded_embed_metadata_keys=keys,
            excluded_llm_metadata_keys=keys,
        )
        for text, metadata in notes()
    ]
    return VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=8))


def made_with(framework: str, **settings: Any) -> RecallServer:
    """A recall server over the corpus, from `framework`'s scoped retrieval and packer."""
    if framework == "langchain":
        retriever = LangChainScopedRetriever(vectorstore=langchain_store())
        return recall_server(retriever, AizkEvidenceCompressor(), **settings)
    return recall_server(llama_index(), AizkEvidencePostprocessor(), **settings)
