"""The MCP boundary over a LlamaIndex app: its `VectorStoreIndex` and `AizkEvidencePostprocessor`.

A recall is the adapter's own packed scoped retrieval (`packed_retrieval`), for the request's
reader and budget; the packing it returns holds the block, the public JSON and the counts. It
runs through the store's sync API on a worker thread, which every supported store has, except
a Qdrant store built with an async client only, which is asked through its async API: so a
store built with one client or the other serves alike. A revision is read from the index's
store by the store's own lookup, chosen as the adapter recognises the store. Imported only once
the app has handed over a LlamaIndex index.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import anyio.to_thread
from llama_index.core import VectorStoreIndex
from llama_index.core.schema import BaseNode
from llama_index.core.vector_stores import SimpleVectorStore
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)
from llama_index.core.vector_stores.utils import metadata_dict_to_node

from aizk_integrations._scopes.directory import ScopeDirectory
from aizk_integrations._scopes.ids import uuid_spellings
from aizk_integrations._stores.plan import is_a
from aizk_integrations._stores.postgres.names import PGVECTORSTORE
from aizk_integrations.llama_index._postprocessor import AizkEvidencePostprocessor
from aizk_integrations.llama_index._scoped import (
    AizkScopedRetriever,
    apacked_retrieval,
    packed_retrieval,
)
from aizk_integrations.llama_index._stores import _CHROMA, _QDRANT
from aizk_integrations.mcp._lookups.chroma import chroma_revision
from aizk_integrations.mcp._lookups.in_process import Listed, RevisionIndex
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

QDRANT_REVISION_MOST = 10_000
"""Points an async-only Qdrant store is asked for in one revision read (its `aget_nodes` reads
one page): a revision that fills it is refused, never cut short."""


class LlamaIndexRetrieval:
    """A LlamaIndex `VectorStoreIndex`, asked through `AizkScopedRetriever` for one reader and
    packed by the app's `AizkEvidencePostprocessor` at the request's budget."""

    def __init__(self, index: VectorStoreIndex, postprocessor: AizkEvidencePostprocessor) -> None:
        self._index = index
        self._keys = MetadataKeys(
            postprocessor.artifact_id_key,
            postprocessor.artifact_content_id_key,
            postprocessor.scopes_key,
        )
        self._async_only = _async_only(index.vector_store)
        self._retriever = AizkScopedRetriever(
            index, evidence=postprocessor, scopes_key=postprocessor.scopes_key
        )

    async def recall(self, query: str, budget: int, reader: ScopeDirectory) -> Recalled:
        # The budget is checked by the tool, within the postprocessor's max_budget.
        retriever = self._retriever.for_reader(reader)
        if self._async_only:
            return recalled(await apacked_retrieval(retriever, query, budget))
        packing = await anyio.to_thread.run_sync(packed_retrieval, retriever, query, budget)
        return recalled(packing)

    def revisions(self) -> RevisionRead:
        """The store's own lookup of a revision, as the adapter recognises the store."""
        return _lookup(self._index, self._keys)


def _async_only(store: Any) -> bool:
    """A Qdrant store built with `aclient` alone: its public `client` is then `None`."""
    return is_a(store, *_QDRANT) and store.client is None


def _lookup(index: VectorStoreIndex, keys: MetadataKeys) -> RevisionRead:
    """The store's own way to list a revision's items, as the adapter recognises the store."""
    store = index.vector_store
    if PGVECTORSTORE.holds(store):
        from aizk_integrations.mcp._lookups.postgres import PGVectorStoreRevisions

        return PGVectorStoreRevisions(store, keys).read
    if _async_only(store):
        return _AsyncQdrant(store, keys).read
    if is_a(store, *_QDRANT):
        return off_the_loop(_Qdrant(store, keys).read)
    if is_a(store, *_CHROMA):
        return off_the_loop(lambda ids: chroma_revision(store.client.get, keys, ids))
    if isinstance(store, SimpleVectorStore):
        metadata = _Docstore(index, keys, lambda: store.data.metadata_dict, _as_held)
        return off_the_loop(metadata.read)
    if not store.stores_text:  # FAISS, and any store that keeps only vectors
        nodes = _Docstore(index, keys, lambda: index.index_struct.nodes_dict, _in_docstore(index))
        return off_the_loop(nodes.read)
    raise no_lookup(store)


def _texts(nodes: Iterable[BaseNode]) -> Iterable[tuple[str, Mapping[str, Any]]]:
    return ((node.get_content(), node.metadata) for node in nodes)


class _Docstore:
    """A store that keeps only vectors (`SimpleVectorStore`, FAISS), the nodes in the index's
    docstore: indexed by revision once per change of a map the store keeps (`RevisionIndex`),
    each node then fetched from the docstore by id. For `SimpleVectorStore` the map is its
    metadata by node id, which gets a new entry whenever a node is added again; for FAISS it
    is the index's map of vector ids to node ids, which gets a new vector id whenever a node is
    added again."""

    def __init__(
        self,
        index: VectorStoreIndex,
        keys: MetadataKeys,
        held: Callable[[], Mapping[Any, Any]],
        listed: Listed,
    ) -> None:
        self._index, self._keys = index, keys
        self._revisions = RevisionIndex(held, listed, lambda m: revision_of(m, keys.revision))

    def read(self, ids: RevisionIds) -> list[StoredText]:
        node_ids = list(self._revisions.ids_of(ids))
        nodes = self._index.docstore.get_nodes(node_ids, raise_error=False)
        return stored_texts(_texts(nodes), self._keys, ids)


def _as_held(held: Mapping[Any, Any]) -> Iterable[tuple[str, Mapping[str, Any]]]:
    """`SimpleVectorStore`'s metadata: each node's id and metadata, in the order added."""
    return held.items()


def _in_docstore(index: VectorStoreIndex) -> Listed:
    """The index's map of vector ids to node ids: each node's id and its metadata as the
    docstore holds it, in the order added."""

    def listed(held: Mapping[Any, Any]) -> Iterable[tuple[str, Mapping[str, Any]]]:
        nodes = index.docstore.get_nodes(list(held.values()), raise_error=False)
        return ((node.node_id, node.metadata) for node in nodes)

    return listed


class _Qdrant:
    """LlamaIndex's `QdrantVectorStore` with a sync client: `scroll` with a payload filter."""

    def __init__(self, store: Any, keys: MetadataKeys) -> None:
        self._store, self._keys = store, keys

    def read(self, ids: RevisionIds) -> list[StoredText]:
        points = scrolled(
            self._store.client, self._store.collection_name, revision_filter("", self._keys, ids)
        )
        nodes = (metadata_dict_to_node(point.payload) for point in points)
        return stored_texts(_texts(nodes), self._keys, ids)


class _AsyncQdrant:
    """LlamaIndex's `QdrantVectorStore` with an async client only: its `aget_nodes` with the
    same filter, in one page (`QDRANT_REVISION_MOST`).

    The filter is written as the one alternative of an OR: when asked by metadata alone,
    `aget_nodes` sends an empty list of alternatives (`should`), which qdrant-client's local mode
    at 1.12 (the floor pyproject.toml declares) reads as "one of none must hold", matching no
    point; with one alternative of its own the filter reads the same on every version and on
    a server."""

    def __init__(self, store: Any, keys: MetadataKeys) -> None:
        self._store, self._keys = store, keys

    async def read(self, ids: RevisionIds, reader: ScopeDirectory) -> list[StoredText]:
        both = MetadataFilters(
            filters=[
                MetadataFilter(
                    key=key, value=list(uuid_spellings(value)), operator=FilterOperator.IN
                )
                for key, value in zip(self._keys.revision, ids, strict=True)
            ],
            condition=FilterCondition.AND,
        )
        filters = MetadataFilters(filters=[both], condition=FilterCondition.OR)
        nodes = await self._store.aget_nodes(filters=filters, limit=QDRANT_REVISION_MOST)
        if len(nodes) >= QDRANT_REVISION_MOST:
            raise ValueError(
                f"this revision has {QDRANT_REVISION_MOST} items or more, more than an async-only "
                "QdrantVectorStore is read for in one call: build the store with a sync client "
                "too (client=QdrantClient(...)), or pass revisions="
            )
        return stored_texts(_texts(nodes), self._keys, ids)
