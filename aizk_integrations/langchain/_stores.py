"""How each supported LangChain vector store is asked for only what one reader may read.

A store is asked for its best `top` documents among those its own filter lets through for the
reader: exactly where the filter can say "every scope of the document is one of the reader's"
(an `InMemoryVectorStore` callable, Qdrant's `MatchAny` with `must_not` `MatchExcept`), or with
the strongest condition it can say that every readable document meets (Chroma: at least one of
the reader's scopes). Whatever comes back is checked exactly again before it is returned. A
store with no usable filter (FAISS filters only after its fetch) is searched unfiltered and
paged. The store packages are never imported here: a store of theirs is only recognised once
the app has imported its package.
"""

from __future__ import annotations

import sys
from typing import Any, Protocol, runtime_checkable

from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from aizk_integrations._scope_ids import scopes_within


@runtime_checkable
class StoreSearch(Protocol):
    """How to ask a vector store for one reader's documents, for stores without a built-in way.

    Called as `search(query, top, scope_ids)`: return the store's best `top` documents for
    `query`, best first, among those the store's filter lets through for a reader whose scope
    ids are `scope_ids`. Every document whose scopes are all in `scope_ids` must pass the
    filter; documents that should not are dropped by the exact check after it, so a filter
    that can only say "at least one scope is the reader's" is fine. Fewer than `top` means the
    store has no more. The same filter serves a store's server deployment.
    """

    def __call__(self, query: str, top: int, scope_ids: frozenset[str]) -> list[Document]: ...


def store_search(vectorstore: VectorStore, scopes_key: str) -> StoreSearch:
    """The built-in way to search `vectorstore` for one reader, or an unfiltered search."""
    if isinstance(vectorstore, InMemoryVectorStore):
        return _InMemory(vectorstore, scopes_key)
    if _is(vectorstore, "langchain_chroma", "Chroma"):
        return _Chroma(vectorstore, scopes_key)
    if _is(vectorstore, "langchain_qdrant", "QdrantVectorStore"):
        return _Qdrant(vectorstore, scopes_key)
    return _Unfiltered(vectorstore)


def _is(vectorstore: VectorStore, module: str, name: str) -> bool:
    loaded = sys.modules.get(module)
    kind = getattr(loaded, name, None) if loaded is not None else None
    return isinstance(kind, type) and isinstance(vectorstore, kind)


class _InMemory:
    """Exact: LangChain's in-memory store applies a callable to every document before ranking."""

    def __init__(self, store: InMemoryVectorStore, key: str) -> None:
        self._store, self._key = store, key

    def __call__(self, query: str, top: int, scope_ids: frozenset[str]) -> list[Document]:
        def readable(document: Document) -> bool:
            return scopes_within(document.metadata.get(self._key), scope_ids)

        return self._store.similarity_search(query, k=top, filter=readable)


class _Chroma:
    """Necessary: Chroma's `where` can say a list holds one of the reader's scopes, not that it
    holds only theirs, so a document shared with someone else's scope still comes back."""

    def __init__(self, store: Any, key: str) -> None:
        self._store, self._key = store, key

    def __call__(self, query: str, top: int, scope_ids: frozenset[str]) -> list[Document]:
        clauses = [{self._key: {"$contains": each}} for each in sorted(scope_ids)]
        where = clauses[0] if len(clauses) == 1 else {"$or": clauses}
        documents: list[Document] = self._store.similarity_search(query, k=top, filter=where)
        return documents


class _Qdrant:
    """Exact: at least one of the document's scopes is the reader's (`MatchAny`), and none is
    not (`must_not` `MatchExcept`: on a list, "some value outside these")."""

    def __init__(self, store: Any, key: str) -> None:
        self._store = store
        self._field = f"{store.metadata_payload_key}.{key}"

    def __call__(self, query: str, top: int, scope_ids: frozenset[str]) -> list[Document]:
        from qdrant_client import models  # the store's own package, loaded by the app already

        ids = sorted(scope_ids)
        readable = models.Filter(
            must=[models.FieldCondition(key=self._field, match=models.MatchAny(any=ids))],
            must_not=[
                models.FieldCondition(key=self._field, match=models.MatchExcept(**{"except": ids}))
            ],
        )
        documents: list[Document] = self._store.similarity_search(query, k=top, filter=readable)
        return documents


class _Unfiltered:
    """No filter at retrieval: the store's own ranking, paged and checked exactly after.

    FAISS takes a filter but applies it to the `fetch_k` it already fetched, which is paging by
    another name; any other store without a built-in way is searched the same, until it is
    given a `StoreSearch` of its own.
    """

    def __init__(self, store: VectorStore) -> None:
        self._store = store

    def __call__(self, query: str, top: int, scope_ids: frozenset[str]) -> list[Document]:
        return self._store.similarity_search(query, k=top)
