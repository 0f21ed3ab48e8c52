"""The MCP boundary over a LangChain app: its `AizkScopedRetriever` and `AizkEvidenceCompressor`.

A recall is the adapters' own packed retrieval (`apacked_retrieval`, what
`AizkEvidenceRetriever` runs), asked for the request's reader and budget; the packing it returns
holds the block, the public JSON and the counts. A revision is read from the retriever's store
by the store's own lookup, chosen by the adapter's own recognition of the store (`searcher`).
Imported only once the app has handed over a LangChain retriever.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.runnables import RunnableConfig

from aizk_integrations._scopes.directory import ScopeDirectory
from aizk_integrations._stores.plan import is_a
from aizk_integrations._stores.postgres.names import PGVECTOR
from aizk_integrations.langchain import _pgvectorstore, _stores
from aizk_integrations.langchain._compressor import AizkEvidenceCompressor
from aizk_integrations.langchain._config import BUDGET_CONFIG_KEY, READER_CONFIG_KEY
from aizk_integrations.langchain._scoped import AizkScopedRetriever, apacked_retrieval
from aizk_integrations.mcp._lookups.chroma import chroma_revision
from aizk_integrations.mcp._lookups.in_process import RevisionIndex
from aizk_integrations.mcp._lookups.qdrant import revision_filter, scrolled
from aizk_integrations.mcp._retrieval import Recalled, no_lookup, recalled
from aizk_integrations.mcp._revisions import (
    MetadataKeys,
    RevisionIds,
    RevisionRead,
    StoredText,
    off_the_loop,
    revision_of,
    stored_texts,
)

_FAISS = ("langchain_community.vectorstores.faiss", "FAISS")


class LangChainRetrieval:
    """A LangChain `AizkScopedRetriever` packed by the app's `AizkEvidenceCompressor`."""

    def __init__(self, retriever: AizkScopedRetriever, compressor: AizkEvidenceCompressor) -> None:
        if compressor.reader_of_user is not None:
            raise ValueError(
                "the AizkEvidenceCompressor has reader_of_user, which would choose each "
                "request's reader from LangGraph's config; the MCP server names the reader "
                "itself (reader= or the bearer token): build the compressor without it"
            )
        self._retriever, self._compressor = retriever, compressor
        self._keys = MetadataKeys(
            compressor.artifact_id_key, compressor.artifact_content_id_key, compressor.scopes_key
        )

    async def recall(self, query: str, budget: int, reader: ScopeDirectory) -> Recalled:
        config: RunnableConfig = {
            "configurable": {READER_CONFIG_KEY: reader, BUDGET_CONFIG_KEY: budget}
        }
        packing = await apacked_retrieval(self._compressor, self._retriever, query, config, reader)
        return recalled(packing)

    def revisions(self) -> RevisionRead:
        """The store's own lookup of a revision, as the adapter recognises the store."""
        return _lookup(self._retriever.vectorstore, self._keys, self._retriever.scopes_key)


def _lookup(store: Any, keys: MetadataKeys, scopes_key: str) -> RevisionRead:
    """The store's own way to list a revision's items, by the adapter's recognition of it."""
    if PGVECTOR.holds(store):
        from aizk_integrations.mcp._lookups.postgres import PGVectorRevisions

        return PGVectorRevisions(store, keys).read
    if _pgvectorstore.holds(store):
        from aizk_integrations.mcp._lookups.postgres import ColumnsStoreRevisions

        return ColumnsStoreRevisions(store, keys, scopes_key).read
    plan = _stores.searcher(store, scopes_key, None)
    if isinstance(plan, _stores._InMemory):
        return off_the_loop(_InMemory(store, keys).read)
    if isinstance(plan, _stores._Chroma):
        return off_the_loop(lambda ids: chroma_revision(store.get, keys, ids))
    if isinstance(plan, _stores._Qdrant):
        return off_the_loop(_Qdrant(store, keys).read)
    if is_a(store, *_FAISS):
        return off_the_loop(_Faiss(store, keys).read)
    raise no_lookup(store)


class _InMemory:
    """`InMemoryVectorStore`: its dict indexed by revision (`RevisionIndex`), each item then
    fetched by id (`get_by_ids`)."""

    def __init__(self, store: Any, keys: MetadataKeys) -> None:
        self._store, self._keys = store, keys
        self._index = RevisionIndex(
            lambda: store.store,
            lambda held: ((item_id, item["metadata"]) for item_id, item in held.items()),
            lambda metadata: revision_of(metadata, keys.revision),
        )

    def read(self, ids: RevisionIds) -> list[StoredText]:
        found: Sequence[Document] = self._store.get_by_ids(list(self._index.ids_of(ids)))
        return stored_texts(((d.page_content, d.metadata) for d in found), self._keys, ids)


class _Faiss:
    """langchain-community's `FAISS`: its docstore indexed by revision, in the order of its
    `index_to_docstore_id` (the order added), each item then fetched by id (`get_by_ids`)."""

    def __init__(self, store: Any, keys: MetadataKeys) -> None:
        self._store, self._keys = store, keys
        self._index = RevisionIndex(
            lambda: store.index_to_docstore_id,
            lambda held: (
                (document.id, document.metadata)
                for document in store.get_by_ids(list(held.values()))
            ),
            lambda metadata: revision_of(metadata, keys.revision),
        )

    def read(self, ids: RevisionIds) -> list[StoredText]:
        found: Sequence[Document] = self._store.get_by_ids(list(self._index.ids_of(ids)))
        return stored_texts(((d.page_content, d.metadata) for d in found), self._keys, ids)


class _Qdrant:
    """langchain-qdrant's `QdrantVectorStore`: `scroll` with a filter on the metadata payload
    (its local mode and a server alike)."""

    def __init__(self, store: Any, keys: MetadataKeys) -> None:
        self._store, self._keys = store, keys

    def read(self, ids: RevisionIds) -> list[StoredText]:
        store = self._store
        found = scrolled(
            store.client,
            store.collection_name,
            revision_filter(f"{store.metadata_payload_key}.", self._keys, ids),
        )
        items = (
            (
                point.payload.get(store.content_payload_key),
                point.payload.get(store.metadata_payload_key) or {},
            )
            for point in found
        )
        return stored_texts(items, self._keys, ids)
