"""The corpus in every store scoped retrieval supports, each made as its users make it, and a
recall server over each: the store matrix of the MCP boundary.

Each store is built once per test module (`built`), in its embedded or local mode, from the same
notes under the same ids (`corpus.item_id`, which sort as the notes are stored). The Postgres
stores are made in `tests/mcp/postgres_stores.py`, on the session's throwaway server.
"""

from __future__ import annotations

import asyncio
import itertools
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import chromadb
import faiss
from chromadb.config import Settings
from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from langchain_qdrant import QdrantVectorStore as LangChainQdrant
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores import SimpleVectorStore
from llama_index.core.vector_stores.types import BasePydanticVectorStore
from llama_index.vector_stores.chroma import ChromaVectorStore
from llama_index.vector_stores.faiss import FaissVectorStore
from llama_index.vector_stores.qdrant import QdrantVectorStore as LlamaIndexQdrant
from qdrant_client import AsyncQdrantClient, QdrantClient, models

from aizk_integrations.langchain import AizkEvidenceCompressor
from aizk_integrations.langchain import AizkScopedRetriever as LangChainScopedRetriever
from aizk_integrations.llama_index import AizkEvidencePostprocessor
from aizk_integrations.mcp import recall_server
from tests.mcp.corpus import item_id, notes

warnings.filterwarnings("ignore", message="`langchain-community` is being sunset")
from langchain_community.vectorstores import FAISS  # noqa: E402

LANGCHAIN = ("langchain-in-memory", "langchain-chroma", "langchain-qdrant", "langchain-faiss")
LLAMA_INDEX = (
    "llama-index-simple",
    "llama-index-chroma",
    "llama-index-qdrant",
    "llama-index-qdrant-async-only",
    "llama-index-faiss",
)
KINDS = (*LANGCHAIN, *LLAMA_INDEX)
LANGCHAIN_DIMENSIONS = 32
LLAMA_INDEX_DIMENSIONS = 8
_KEYS = ["scopes", "artifact_id", "artifact_content_id"]
_names = itertools.count()


def _name() -> str:
    """A collection name of its own: embedded Chroma clients of one process share collections."""
    return f"mcp-matrix-{next(_names)}"


@dataclass(frozen=True)
class Built:
    """One store holding the corpus: the app's retriever (or index) and packer over it."""

    kind: str
    retriever: object
    packer: object

    def server(self, **settings: Any) -> Any:
        """A recall server over this store, as `recall_server(retriever, packer, ...)`."""
        return recall_server(self.retriever, self.packer, **settings)


def built(kind: str) -> Built:
    """The corpus in a store of `kind`."""
    if kind in LANGCHAIN:
        store = _LANGCHAIN_STORES[kind]()
        store.add_documents(documents(), ids=[item_id(n) for n in range(len(notes()))])
        return Built(kind, LangChainScopedRetriever(vectorstore=store), AizkEvidenceCompressor())
    return Built(kind, _llama_index(kind), AizkEvidencePostprocessor())


def documents() -> list[Document]:
    return [
        Document(text, id=item_id(n), metadata=metadata)
        for n, (text, metadata) in enumerate(notes())
    ]


def nodes() -> list[TextNode]:
    return [
        TextNode(
            id_=item_id(n),
            text=text,
            metadata=metadata,
            excluded_embed_metadata_keys=_KEYS,
            excluded_llm_metadata_keys=_KEYS,
        )
        for n, (text, metadata) in enumerate(notes())
    ]


def _embedding() -> DeterministicFakeEmbedding:
    return DeterministicFakeEmbedding(size=LANGCHAIN_DIMENSIONS)


def _chroma() -> VectorStore:
    client = chromadb.EphemeralClient(Settings(anonymized_telemetry=False))
    return Chroma(collection_name=_name(), embedding_function=_embedding(), client=client)


def _qdrant() -> VectorStore:
    client = QdrantClient(":memory:")
    client.create_collection(
        "mcp-matrix",
        vectors_config=models.VectorParams(
            size=LANGCHAIN_DIMENSIONS, distance=models.Distance.COSINE
        ),
    )
    return LangChainQdrant(client=client, collection_name="mcp-matrix", embedding=_embedding())


def _faiss() -> VectorStore:
    store = FAISS.from_documents([Document("seed", id="seed")], _embedding(), ids=["seed"])
    store.delete(["seed"])
    return store


_LANGCHAIN_STORES: dict[str, Callable[[], VectorStore]] = {
    "langchain-in-memory": lambda: InMemoryVectorStore(embedding=_embedding()),
    "langchain-chroma": _chroma,
    "langchain-qdrant": _qdrant,
    "langchain-faiss": _faiss,
}


def _llama_index(kind: str) -> VectorStoreIndex:
    embed_model = MockEmbedding(embed_dim=LLAMA_INDEX_DIMENSIONS)
    if kind == "llama-index-qdrant-async-only":
        store = LlamaIndexQdrant(
            aclient=AsyncQdrantClient(":memory:"), collection_name="mcp-matrix", index_doc_id=False
        )
        index = VectorStoreIndex(
            [],
            storage_context=StorageContext.from_defaults(vector_store=store),
            embed_model=embed_model,
            use_async=True,
        )
        asyncio.run(index.ainsert_nodes(nodes()))
        return index
    vector_store: BasePydanticVectorStore
    if kind == "llama-index-simple":
        vector_store = SimpleVectorStore()
    elif kind == "llama-index-chroma":
        client = chromadb.EphemeralClient(Settings(anonymized_telemetry=False))
        collection = client.create_collection(_name(), embedding_function=None)
        vector_store = ChromaVectorStore(chroma_collection=collection)
        vector_store.flat_metadata = False  # its constructor drops a flat_metadata keyword
    elif kind == "llama-index-qdrant":
        vector_store = LlamaIndexQdrant(
            client=QdrantClient(":memory:"), collection_name="mcp-matrix", index_doc_id=False
        )
    else:
        vector_store = FaissVectorStore(faiss_index=faiss.IndexFlatL2(LLAMA_INDEX_DIMENSIONS))
    return VectorStoreIndex(
        nodes(),
        storage_context=StorageContext.from_defaults(vector_store=vector_store),
        embed_model=embed_model,
    )
