"""How each supported LangChain vector store is asked for only what one reader may read.

A store is asked for its best `top` documents among those its own filter lets through for the
reader: exactly where the filter can say "every scope of the document is one of the reader's"
(an `InMemoryVectorStore` callable, Qdrant's `MatchAny` with `must_not` `MatchExcept`), or with
the strongest condition it can say that every readable document meets (Chroma: at least one of
the reader's values). A filter names every value a store may hold for the reader's ids
(`_scope_ids.spellings`), and past what a store's filter can carry the store is paged
unfiltered instead (`_store_filters`). langchain-postgres's `PGVectorStore` and `PGVector` are
asked in SQL of our own, exactly and in one query, with the reader's ids set for row-level
security too (`_pgvectorstore`, `_postgres`).
Whatever comes back is checked exactly again before it is returned. A store with no usable
filter (FAISS filters only after its fetch) is searched unfiltered and paged. The store packages
are never imported here: a store of theirs is only recognised once the app has imported its
package.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from langchain_core.documents import Document
from langchain_core.runnables.config import run_in_executor
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from aizk_integrations._scopes.ids import may_retrieve
from aizk_integrations._stores.filters import chroma_where, qdrant_filter
from aizk_integrations._stores.plan import StorePlan, is_a
from aizk_integrations._stores.postgres.names import PGVECTOR
from aizk_integrations._stores.postgres.setup import store_setup
from aizk_integrations.langchain import _pgvectorstore


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


class Searcher(Protocol):
    """A store asked for one reader's documents, sync or async: what scoped retrieval pages."""

    def search(self, query: str, top: int, scope_ids: frozenset[str]) -> list[Document]: ...

    async def asearch(self, query: str, top: int, scope_ids: frozenset[str]) -> list[Document]: ...


def searcher(vectorstore: VectorStore, scopes_key: str, custom: StoreSearch | None) -> Searcher:
    """The app's own `StoreSearch`, else the built-in way for the store, else unfiltered."""
    if custom is not None:
        return _Custom(custom)
    if isinstance(vectorstore, InMemoryVectorStore):
        return _InMemory(vectorstore, scopes_key)
    if is_a(vectorstore, "langchain_chroma", "Chroma"):
        return _Chroma(vectorstore, scopes_key)
    if is_a(vectorstore, "langchain_qdrant", "QdrantVectorStore"):
        return _Qdrant(vectorstore, scopes_key)
    if PGVECTOR.holds(vectorstore):
        from aizk_integrations.langchain._postgres import PGVectorSearch  # needs SQLAlchemy

        return PGVectorSearch(vectorstore, scopes_key)
    if _pgvectorstore.holds(vectorstore):
        return _pgvectorstore.PGVectorStoreSearch(vectorstore, scopes_key)
    return _Unfiltered(vectorstore, scopes_key)


def check_store(vectorstore: VectorStore, scopes_key: str) -> None:
    """Refuse, when a retriever is built, a store whose layout keeps no scopes scoped retrieval
    can read (a `PGVectorStore` with neither a scopes column nor a JSON metadata column),
    saying how to make it."""
    if _pgvectorstore.holds(vectorstore):
        _pgvectorstore.StoreLayout.of(vectorstore, scopes_key)


def postgres_setup(vectorstore: VectorStore, *, role: str, scopes_key: str = "scopes") -> list[str]:
    """The SQL a migration runs once, in order, as the owner of a Postgres store's tables, for
    scoped retrieval and row-level security: the scope ids functions, a generated column of the
    rows' canonical scope ids with a GIN index on it, an HNSW index on the embeddings, the
    reader policy (forced on the owner too), and SELECT for `role`, the role the app queries as,
    on the tables each search reads. For langchain-postgres's `PGVectorStore` (the store its
    README recommends) and `PGVector`.

    Run it once the store has made its tables: `for statement in postgres_setup(store,
    role="app_reader"): connection.exec_driver_sql(statement)`. PGVector's HNSW index needs a
    store made with `embedding_length`. docs/postgres.md says what `role` must not be allowed
    to do.
    """
    if _pgvectorstore.holds(vectorstore):
        return _pgvectorstore.setup_statements(vectorstore, role, scopes_key)
    if not PGVECTOR.holds(vectorstore):
        raise TypeError(
            "postgres_setup takes langchain-postgres's PGVectorStore or PGVector store, not "
            f"{type(vectorstore).__name__}"
        )
    return store_setup(PGVECTOR, vectorstore, role, scopes_key)


class _Filtered(StorePlan[VectorStore, Any]):
    """A store asked with a filter of its own language: `filter_for` the reader's ids, or
    `None` for no filter (the store is then paged unfiltered)."""

    def search(self, query: str, top: int, scope_ids: frozenset[str]) -> list[Document]:
        narrowing = self.filter_for(scope_ids)
        if narrowing is None:
            return self._store.similarity_search(query, k=top)
        return self._store.similarity_search(query, k=top, filter=narrowing)

    async def asearch(self, query: str, top: int, scope_ids: frozenset[str]) -> list[Document]:
        narrowing = self.filter_for(scope_ids)
        if narrowing is None:
            return await self._store.asimilarity_search(query, k=top)
        return await self._store.asimilarity_search(query, k=top, filter=narrowing)


class _InMemory(_Filtered):
    """Exact, for any reader: LangChain's in-memory store applies a callable to every document
    before ranking, and the callable is the packer's own rule (`may_retrieve`: with the records
    of several ids in one string, for the check after it to name)."""

    def filter_for(self, scope_ids: frozenset[str]) -> Any:
        def readable(document: Document) -> bool:
            return may_retrieve(document.metadata.get(self._key), scope_ids)

        return readable


class _Chroma(_Filtered):
    """Necessary: at least one of the document's values is the reader's (`chroma_where`);
    paged past `CHROMA_MOST_VALUES`."""

    def filter_for(self, scope_ids: frozenset[str]) -> Any | None:
        return chroma_where(self._key, scope_ids)


class _Qdrant(_Filtered):
    """Exact for scopes held as texts, necessary for numbers (`qdrant_filter`); paged past
    what the client answers well (fewer values in local mode than from a server)."""

    def __init__(self, store: Any, key: str) -> None:
        super().__init__(store, f"{store.metadata_payload_key}.{key}")
        self._client = store.client

    def filter_for(self, scope_ids: frozenset[str]) -> Any | None:
        return qdrant_filter(self._key, scope_ids, self._client)


class _Unfiltered(_Filtered):
    """No filter at retrieval: the store's own ranking, paged and checked exactly after.

    FAISS takes a filter but applies it to the `fetch_k` it already fetched, which is paging by
    another name; any other store without a built-in way is searched the same, until it is
    given a `StoreSearch` of its own.
    """

    def filter_for(self, scope_ids: frozenset[str]) -> None:
        return None


class _Custom:
    """The app's own `StoreSearch`; its async calls run it on LangChain's executor."""

    def __init__(self, search: StoreSearch) -> None:
        self._search = search

    def search(self, query: str, top: int, scope_ids: frozenset[str]) -> list[Document]:
        return self._search(query, top, scope_ids)

    async def asearch(self, query: str, top: int, scope_ids: frozenset[str]) -> list[Document]:
        return await run_in_executor(None, self._search, query, top, scope_ids)
