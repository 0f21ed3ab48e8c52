"""How each vector store is asked for no more than one reader may read, and kept quiet about it.

A reader may read an item when every one of its scopes is theirs. A store that can say exactly
that is asked exactly; one that can say only "some scope of the item is the reader's" (a
necessary condition) is asked that, and scoped retrieval re-checks what comes back; one that
takes no filter at all, or a reader past what its filter can carry, is paged. Which store is
which was measured on each one's own filter code, not assumed from the operator names, which
mean different things on a list in different stores. One small class per store says how.
LlamaIndex's `PGVectorStore` is asked in SQL of our own, exactly and in one query, with the
reader's ids set for row-level security too (`_postgres`).

The store packages are never imported here until a store of theirs is in hand: a user of one
store installs no other.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from llama_index.core.vector_stores import MetadataFilters, SimpleVectorStore
from llama_index.core.vector_stores.types import BasePydanticVectorStore
from pydantic import BaseModel, ConfigDict, Field

from aizk_integrations._scopes.ids import may_retrieve
from aizk_integrations._stores.filters import chroma_where, qdrant_filter
from aizk_integrations._stores.plan import StorePlan, is_a
from aizk_integrations._stores.postgres.names import PGVECTORSTORE
from aizk_integrations._stores.postgres.setup import store_setup

if TYPE_CHECKING:
    from aizk_integrations.llama_index._postgres import PGVectorStoreSearch

_CHROMA = ("llama_index.vector_stores.chroma", "ChromaVectorStore")
_QDRANT = ("llama_index.vector_stores.qdrant", "QdrantVectorStore")


class ScopeFilter(BaseModel):
    """What narrows one vector store query to the items a reader may read.

    The answer a `scoped_query` gives, for a reader's scope ids, for a store the library does not
    know (Pinecone, Weaviate, Elasticsearch...): LlamaIndex metadata `filters`, the
    store's own query keyword arguments (`store_kwargs`), the ids of the only nodes the query
    may return (`node_ids`), or any of them together. Best is exactly "every scope of the item
    is one of these"; any condition every readable item meets is safe, because what the store
    returns is checked again exactly before it is returned, but a weaker one costs pages. An
    empty `ScopeFilter()` pages through the whole store.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    filters: MetadataFilters | None = Field(
        default=None, description="Set as the store query's `filters`; None: none."
    )
    store_kwargs: Mapping[str, Any] = Field(
        default_factory=dict,
        description=(
            "Keyword arguments for the store's `query`/`aquery`, for conditions LlamaIndex's "
            "filters cannot carry to it (Chroma's `where`, Qdrant's `qdrant_filters`)."
        ),
    )
    node_ids: tuple[str, ...] | None = Field(
        default=None,
        description="Set as the store query's `node_ids`: the only nodes it may return; None: any.",
    )


_Plan = StorePlan[BasePydanticVectorStore, ScopeFilter]
"""How one kind of store is asked for a reader's items: its docstring says how exactly."""


def built_in_filter(
    vector_store: BasePydanticVectorStore, scope_ids: frozenset[str], scopes_key: str
) -> ScopeFilter:
    """The narrowest condition the store can express for a reader's scope ids."""
    plan: type[_Plan]
    if is_a(vector_store, *_QDRANT):
        plan = _Qdrant
    elif isinstance(vector_store, SimpleVectorStore):
        plan = _Simple
    elif is_a(vector_store, *_CHROMA):
        plan = _Chroma
    else:
        plan = _Unfiltered
    return plan(vector_store, scopes_key).filter_for(scope_ids)


def postgres_search(
    vector_store: BasePydanticVectorStore, scopes_key: str
) -> PGVectorStoreSearch | None:
    """For a `PGVectorStore`, the search of our own that asks it for a reader's nodes (made
    once per retriever: it holds the engine); None for any other store, which is asked through
    its own `query` with `built_in_filter`."""
    if not PGVECTORSTORE.holds(vector_store):
        return None
    from aizk_integrations.llama_index._postgres import PGVectorStoreSearch  # needs SQLAlchemy

    return PGVectorStoreSearch(vector_store, scopes_key)


class _Qdrant(_Plan):
    """Exact for scopes held as texts, necessary for numbers (`_store_filters.qdrant_filter`),
    passed as Qdrant's own filter rather than as LlamaIndex's IN and NOT(NIN), which on a list
    mean something else in other stores; the same filter serves a Qdrant server. Paged past what
    the client answers well (fewer values in local mode than from a server)."""

    def filter_for(self, scope_ids: frozenset[str]) -> ScopeFilter:
        store: Any = self._store  # an async-only store has no client to say it is local
        qdrant_filters = qdrant_filter(self._key, scope_ids, store.client)
        if qdrant_filters is None:
            return ScopeFilter()
        return ScopeFilter(store_kwargs={"qdrant_filters": qdrant_filters})


class _Simple(_Plan):
    """Exact, for any reader: the store keeps each node's metadata beside its vector, so the
    query is held to the nodes the packer's own rule lets through (`node_ids`). Its filters
    cannot say it (`ANY` tests substrings of a bare string and fails on a number). With the
    reader's nodes go those of several ids in one string (`may_retrieve`), for the check after
    it to name. A store persisted without metadata is paged."""

    def filter_for(self, scope_ids: frozenset[str]) -> ScopeFilter:
        data = self._store.data  # type: ignore[attr-defined]  # SimpleVectorStore's own field
        if data.embedding_dict and not data.metadata_dict:
            return ScopeFilter()
        return ScopeFilter(
            node_ids=tuple(
                node_id
                for node_id, metadata in data.metadata_dict.items()
                if may_retrieve(metadata.get(self._key), scope_ids)
            )
        )


class _Chroma(_Plan):
    """Necessary: some value of the item is the reader's (`_store_filters.chroma_where`), as
    Chroma's native `where`: LlamaIndex's Chroma store refuses `ANY`. Paged past
    `CHROMA_MOST_VALUES`."""

    def filter_for(self, scope_ids: frozenset[str]) -> ScopeFilter:
        where = chroma_where(self._key, scope_ids)
        return ScopeFilter() if where is None else ScopeFilter(store_kwargs={"where": where})


class _Unfiltered(_Plan):
    """No filter (FAISS refuses every filter, and any store not listed has none of ours): the
    store's own ranking, paged and checked exactly."""

    def filter_for(self, scope_ids: frozenset[str]) -> ScopeFilter:
        return ScopeFilter()


def check_store(vector_store: BasePydanticVectorStore) -> None:
    """Refuse a store that cannot be asked for a reader's items, saying how to build it.

    LlamaIndex's `ChromaVectorStore` flattens metadata by default and refuses a list, and its
    constructor drops a `flat_metadata=False` keyword, so a user who asked for lists may still
    have flat metadata, with scopes either refused at ingestion or squeezed into one string.
    """
    if is_a(vector_store, *_CHROMA) and getattr(vector_store, "flat_metadata", False):
        raise ValueError(
            "scoped retrieval needs the scope ids stored as a list, and this index's "
            "ChromaVectorStore keeps flat metadata (flat_metadata=True), which refuses lists; "
            "set `vector_store.flat_metadata = False` on the store before adding nodes "
            "(ChromaVectorStore's constructor drops a flat_metadata keyword), then write "
            "scopes with scope_metadata"
        )


def postgres_setup(
    vector_store: BasePydanticVectorStore, *, role: str, scopes_key: str = "scopes"
) -> list[str]:
    """The SQL a migration runs once, in order, as the owner of a `PGVectorStore`'s table, for
    scoped retrieval and row-level security: the scope ids functions, a generated column of the
    rows' canonical scope ids with a GIN index on it, an HNSW index on the embeddings, the
    reader policy (forced on the owner too), and SELECT for `role`, the role the app queries as.

    Run it once the store has made its table (its first `add`): `for statement in
    postgres_setup(vector_store, role="app_reader"): connection.exec_driver_sql(statement)`.
    docs/postgres.md says what `role` must not be allowed to do.
    """
    return store_setup(PGVECTORSTORE, vector_store, role, scopes_key)


_in_scoped_query: ContextVar[bool] = ContextVar("aizk_in_scoped_query", default=False)


class _QuietDuringScopedQuery(logging.Filter):
    """Drops a store's own debug and info records while scoped retrieval queries it.

    Stores log what they return (Chroma's store logs the first 100 characters of every node it
    found at DEBUG), and under a necessary filter that includes items the re-check is about to
    withhold: another reader's text, in whatever the app's logs are shipped to. Warnings pass.
    The flag is a context variable, so only the scoped query's own records are dropped, not
    those of a concurrent request on another thread or task.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or not _in_scoped_query.get()


_QUIET = _QuietDuringScopedQuery()


@contextmanager
def quiet_store_logs(vector_store: BasePydanticVectorStore) -> Iterator[None]:
    """Run a scoped store query with the loggers of the store's modules (its class's and its
    bases', up to LlamaIndex's base store) quiet below WARNING."""
    for cls in type(vector_store).__mro__:
        if cls is BasePydanticVectorStore:
            break
        logging.getLogger(cls.__module__).addFilter(_QUIET)  # added once, however often called
    token = _in_scoped_query.set(True)
    try:
        yield
    finally:
        _in_scoped_query.reset(token)
