"""The eight supported stores, each built from the same items and asked the way users ask them.

Four LangChain stores (in-memory, Chroma, Qdrant, FAISS) and four LlamaIndex ones
(SimpleVectorStore, Chroma, Qdrant, FAISS), each in its embedded or local mode, behind one small
interface: what scoped retrieval returns a reader (on its own, or packed), and what the packer
alone would show that reader of everything the store holds. The laws of scoped retrieval on
real data compare the two.
"""

from __future__ import annotations

import asyncio
import uuid
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import chromadb
import faiss
from chromadb.api import ClientAPI
from chromadb.config import Settings
from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.runnables import RunnableConfig
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from langchain_qdrant import QdrantVectorStore as LangChainQdrant
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.schema import NodeWithScore, TextNode
from llama_index.core.vector_stores import SimpleVectorStore
from llama_index.core.vector_stores.types import BasePydanticVectorStore
from llama_index.vector_stores.chroma import ChromaVectorStore
from llama_index.vector_stores.faiss import FaissVectorStore
from llama_index.vector_stores.qdrant import QdrantVectorStore as LlamaIndexQdrant
from qdrant_client import AsyncQdrantClient, QdrantClient, models

from aizk_integrations import ScopeDirectory
from aizk_integrations import langchain as aizk_langchain
from aizk_integrations import llama_index as aizk_llama_index
from tests.adapters.word_embedding import WordEmbedding, word_vector
from tests.scoped_corpus import DIMENSIONS, hash_vector

warnings.filterwarnings("ignore", message="`langchain-community` is being sunset")
from langchain_community.vectorstores import FAISS  # noqa: E402

LANGCHAIN = ("langchain-in-memory", "langchain-chroma", "langchain-qdrant", "langchain-faiss")
LLAMA_INDEX = (
    "llama-index-simple",
    "llama-index-chroma",
    "llama-index-qdrant",
    "llama-index-faiss",
)
KINDS = (*LANGCHAIN, *LLAMA_INDEX)
MOST = 100_000
"""A budget no test store's items fill: the packer's oracle sees everything readable."""
APPROXIMATE = ("langchain-chroma", "llama-index-chroma")
"""Chroma's HNSW index ranks approximately: two of its queries may disagree on the last few."""


@dataclass(frozen=True)
class Item:
    """One stored item: an id both Qdrant and Chroma take (a UUID's text), its text, its
    metadata as written."""

    text: str
    metadata: dict[str, Any]

    @property
    def id(self) -> str:
        return str(uuid.uuid5(uuid.NAMESPACE_URL, self.text))


class WordEmbeddings(Embeddings):
    """`hash_vector` as a LangChain embedding (see `tests/scoped_corpus.py`)."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [word_vector(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return hash_vector(text)


@cache
def chroma_client() -> ClientAPI:
    """The tests' one embedded Chroma, opened at first use rather than at import: its runtime
    starts threads, and a process that only collected the tests (mutmut's fork server, which
    forks a worker per mutant) would hand their held locks to every worker, which then hangs."""
    return chromadb.EphemeralClient(Settings(anonymized_telemetry=False))


_qdrant = QdrantClient(":memory:")
_names = iter(range(10**9))


def _name() -> str:
    return f"store-{next(_names)}"


class Store:
    """One built store, asked for a reader's items the ways users ask."""

    kind: str
    held: list[Item]
    """The items the store took (a store may refuse some forms of metadata when they are added)."""
    refused: list[Item]

    def scoped(self, reader: ScopeDirectory, query: str, k: int) -> list[str]:
        """The texts of the reader's best `k`, from scoped retrieval on its own."""
        raise NotImplementedError

    def ascoped(self, reader: ScopeDirectory, query: str, k: int) -> list[str]:
        raise NotImplementedError

    def packed(self, reader: ScopeDirectory, query: str, budget: int) -> list[str]:
        """The texts scoped retrieval packs for the reader, fetched as the walk reads them."""
        raise NotImplementedError

    def shown(self, reader: ScopeDirectory, query: str) -> list[str]:
        """What the packer alone shows the reader of everything the store holds, in the store's
        ranking: the oracle scoped retrieval must agree with."""
        raise NotImplementedError


def build(kind: str, items: Sequence[Item], odd: Sequence[Item] = (), **settings: Any) -> Store:
    """A store of `kind` holding `items`, added at once, and those of `odd` it takes, added one
    at a time; `settings` go to the retriever."""
    if kind in LANGCHAIN:
        return _LangChainStore(kind, items, odd, settings)
    return _LlamaIndexStore(kind, items, odd, settings)


def _added(
    items: Sequence[Item], odd: Sequence[Item], add: Callable[[Sequence[Item]], object]
) -> tuple[list[Item], list[Item]]:
    if items:
        add(items)
    held, refused = list(items), []
    for item in odd:
        try:
            add([item])
        except Exception:  # a store refusing a form of metadata at ingestion
            refused.append(item)
        else:
            held.append(item)
    return held, refused


class _LangChainStore(Store):
    def __init__(
        self, kind: str, items: Sequence[Item], odd: Sequence[Item], settings: dict[str, Any]
    ) -> None:
        self.kind = kind
        self._settings = settings
        embedding = WordEmbeddings()
        store: VectorStore
        if kind == "langchain-in-memory":
            store = InMemoryVectorStore(embedding)
        elif kind == "langchain-chroma":
            store = Chroma(
                collection_name=_name(), embedding_function=embedding, client=chroma_client()
            )
        elif kind == "langchain-qdrant":
            _qdrant.create_collection(
                collection_name=(name := _name()),
                vectors_config=models.VectorParams(
                    size=DIMENSIONS, distance=models.Distance.COSINE
                ),
            )
            store = LangChainQdrant(client=_qdrant, collection_name=name, embedding=embedding)
        else:
            store = FAISS.from_documents(
                [Document("seed", id="seed", metadata={})], embedding, ids=["seed"]
            )
            store.delete(["seed"])
        self.store = store
        self.held, self.refused = _added(
            items,
            odd,
            lambda added: store.add_documents(
                [Document(each.text, id=each.id, metadata=each.metadata) for each in added],
                ids=[each.id for each in added],
            ),
        )

    def _retriever(self, **extra: Any) -> aizk_langchain.AizkScopedRetriever:
        return aizk_langchain.AizkScopedRetriever(
            vectorstore=self.store, **{**self._settings, **extra}
        )

    def scoped(self, reader: ScopeDirectory, query: str, k: int) -> list[str]:
        found = self._retriever(search_kwargs={"k": k}).invoke(query, config=_config(reader))
        return [document.page_content for document in found]

    def ascoped(self, reader: ScopeDirectory, query: str, k: int) -> list[str]:
        found = asyncio.run(
            self._retriever(search_kwargs={"k": k}).ainvoke(query, config=_config(reader))
        )
        return [document.page_content for document in found]

    def packed(self, reader: ScopeDirectory, query: str, budget: int) -> list[str]:
        retriever = aizk_langchain.AizkEvidenceRetriever(
            base_retriever=self._retriever(),
            compressor=aizk_langchain.AizkEvidenceCompressor(budget=budget, return_documents=True),
        )
        kept = retriever.invoke(query, config=_config(reader))
        return [document.page_content for document in kept]

    def shown(self, reader: ScopeDirectory, query: str) -> list[str]:
        every = self.store.similarity_search(query, k=max(1, len(self.held)))
        packer = aizk_langchain.AizkEvidenceCompressor(
            reader=reader, budget=MOST, max_budget=MOST, return_documents=True
        )
        return [document.page_content for document in packer.compress_documents(every, query)]


def _config(reader: ScopeDirectory) -> RunnableConfig:
    return {"configurable": {"aizk_reader": reader}}


class _LlamaIndexStore(Store):
    def __init__(
        self, kind: str, items: Sequence[Item], odd: Sequence[Item], settings: dict[str, Any]
    ) -> None:
        self.kind = kind
        self._settings = settings
        vector_store: BasePydanticVectorStore
        if kind == "llama-index-simple":
            vector_store = SimpleVectorStore()
        elif kind == "llama-index-chroma":
            collection = chroma_client().create_collection(_name(), embedding_function=None)
            vector_store = ChromaVectorStore(chroma_collection=collection)
            vector_store.flat_metadata = False  # its constructor drops a flat_metadata keyword
        elif kind == "llama-index-qdrant":
            vector_store = LlamaIndexQdrant(
                client=_qdrant, collection_name=_name(), index_doc_id=False
            )
        else:
            vector_store = FaissVectorStore(faiss_index=faiss.IndexFlatL2(DIMENSIONS))
        self.index = VectorStoreIndex(
            [],
            storage_context=StorageContext.from_defaults(vector_store=vector_store),
            embed_model=WordEmbedding(),
        )
        self.held, self.refused = _added(
            items, odd, lambda added: self.index.insert_nodes([_node(each) for each in added])
        )
        self._async: VectorStoreIndex | None = None

    def _retriever(self, **extra: Any) -> aizk_llama_index.AizkScopedRetriever:
        return aizk_llama_index.AizkScopedRetriever(self.index, **{**self._settings, **extra})

    def scoped(self, reader: ScopeDirectory, query: str, k: int) -> list[str]:
        found = self._retriever(similarity_top_k=k, max_fetch=self._max_fetch(k))
        return _texts(found.for_reader(reader).retrieve(query))

    def ascoped(self, reader: ScopeDirectory, query: str, k: int) -> list[str]:
        index = self._async_index()
        settings = {**self._settings, "similarity_top_k": k, "max_fetch": self._max_fetch(k)}
        found = aizk_llama_index.AizkScopedRetriever(index, **settings).for_reader(reader)
        return _texts(asyncio.run(found.aretrieve(query)))

    def _max_fetch(self, k: int) -> int:
        """The settings' `max_fetch`, else one far past any test's corpus."""
        most: int = self._settings.get("max_fetch", max(k, 1024))
        return most

    def _async_index(self) -> VectorStoreIndex:
        """The index async calls go to: Qdrant's local mode keeps an async client's points
        apart from a sync client's, so that store is built again behind an async client."""
        if self.kind != "llama-index-qdrant":
            return self.index
        if self._async is None:
            store = LlamaIndexQdrant(
                aclient=AsyncQdrantClient(":memory:"), collection_name=_name(), index_doc_id=False
            )
            self._async = VectorStoreIndex(
                [],
                storage_context=StorageContext.from_defaults(vector_store=store),
                embed_model=WordEmbedding(),
                use_async=True,
            )
            asyncio.run(self._async.ainsert_nodes([_node(item) for item in self.held]))
        return self._async

    def packed(self, reader: ScopeDirectory, query: str, budget: int) -> list[str]:
        evidence = aizk_llama_index.AizkEvidencePostprocessor(budget=budget, return_nodes=True)
        kept = self._retriever(evidence=evidence).for_reader(reader).retrieve(query)
        return _texts(kept)

    def shown(self, reader: ScopeDirectory, query: str) -> list[str]:
        every = self.index.as_retriever(similarity_top_k=max(1, len(self.held))).retrieve(query)
        packer = aizk_llama_index.AizkEvidencePostprocessor(
            reader=reader, budget=MOST, max_budget=MOST, return_nodes=True
        )
        return _texts(packer.postprocess_nodes(every, query_str=query))


def _node(item: Item) -> TextNode:
    return TextNode(
        id_=item.id,
        text=item.text,
        metadata=item.metadata,
        excluded_embed_metadata_keys=list(item.metadata),
        excluded_llm_metadata_keys=list(item.metadata),
        embedding=word_vector(item.text),
    )


def _texts(nodes: list[NodeWithScore]) -> list[str]:
    return [scored.node.get_content() for scored in nodes]
