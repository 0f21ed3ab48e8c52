"""The recall server made from each framework's retrieval over the shared corpus, and an SDK
client session connected to it in memory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import TextNode
from mcp import ClientSession
from mcp.server.fastmcp import FastMCP
from mcp.shared.memory import create_connected_server_and_client_session

from aizk_integrations.langchain import AizkEvidenceCompressor
from aizk_integrations.langchain import AizkScopedRetriever as LangChainScopedRetriever
from aizk_integrations.llama_index import AizkEvidencePostprocessor
from aizk_integrations.mcp import recall_server
from tests.mcp.corpus import langchain_store, notes

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


def made_with(framework: str, **settings: Any) -> FastMCP:
    """A recall server over the corpus, from `framework`'s scoped retrieval and packer."""
    if framework == "langchain":
        retriever = LangChainScopedRetriever(vectorstore=langchain_store())
        return recall_server(retriever, AizkEvidenceCompressor(), **settings)
    return recall_server(llama_index(), AizkEvidencePostprocessor(), **settings)


@asynccontextmanager
async def connected(server: FastMCP, **callbacks: Any) -> AsyncIterator[ClientSession]:
    """The SDK's own client, initialized, talking to `server` in memory (one local user)."""
    async with create_connected_server_and_client_session(server, **callbacks) as session:
        yield session
