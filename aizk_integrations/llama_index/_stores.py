"""How each vector store is asked for no more than one reader may read, and kept quiet about it.

A reader may read an item when every one of its scopes is theirs. A store that can say exactly
that is asked exactly; one that can say only "some scope of the item is the reader's" (a
necessary condition) is asked that, and scoped retrieval re-checks what comes back; one that
takes no filter at all, or a reader past what its filter can carry, is paged. Which store is
which was measured on each one's own filter code, not assumed from the operator names, which
mean different things on a list in different stores. One small class per store says how.
LlamaIndex's `PGVectorStore` is asked in its own SQL query, exactly, through the
`customize_query_fn` it is built with (`_postgres`).

The store packages are never imported here until a store of theirs is in hand: a user of one
store installs no other.
"""

from __future__ import annotations

import logging
import sys
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from llama_index.core.vector_stores import MetadataFilters, SimpleVectorStore
from llama_index.core.vector_stores.types import BasePydanticVectorStore
from pydantic import BaseModel, ConfigDict, Field

from aizk_integrations._scopes.ids import scopes_within
from aizk_integrations._stores import postgres as _postgres
from aizk_integrations._stores.filters import chroma_where, qdrant_filter
from aizk_integrations.llama_index._postgres import pgvector_scoped_query, scoped_read

_CHROMA = ("llama_index.vector_stores.chroma", "ChromaVectorStore")
_QDRANT = ("llama_index.vector_stores.qdrant", "QdrantVectorStore")
_PGVECTOR = ("llama_index.vector_stores.postgres", "PGVectorStore")


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


class _Plan(ABC):
    """How one kind of store is asked for a reader's items: its docstring says how exactly."""

    def __init__(self, vector_store: BasePydanticVectorStore, scopes_key: str) -> None:
        self._store, self._key = vector_store, scopes_key

    @abstractmethod
    def filter_for(self, scope_ids: frozenset[str]) -> ScopeFilter: ...


def built_in_filter(
    vector_store: BasePydanticVectorStore, scope_ids: frozenset[str], scopes_key: str
) -> ScopeFilter:
    """The narrowest condition the store can express for a reader's scope ids."""
    plan: type[_Plan]
    if _is_a(vector_store, _QDRANT):
        plan = _Qdrant
    elif isinstance(vector_store, SimpleVectorStore):
        plan = _Simple
    elif _is_a(vector_store, _CHROMA):
        plan = _Chroma
    elif _is_a(vector_store, _PGVECTOR):
        plan = _PGVectorStore
    else:
        plan = _Unfiltered
    return plan(vector_store, scopes_key).filter_for(scope_ids)


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
    cannot say it (`ANY` tests substrings of a bare string and fails on a number). A store
    persisted without metadata is paged."""

    def filter_for(self, scope_ids: frozenset[str]) -> ScopeFilter:
        data = self._store.data  # type: ignore[attr-defined]  # SimpleVectorStore's own field
        if data.embedding_dict and not data.metadata_dict:
            return ScopeFilter()
        return ScopeFilter(
            node_ids=tuple(
                node_id
                for node_id, metadata in data.metadata_dict.items()
                if scopes_within(metadata.get(self._key), scope_ids)
            )
        )


class _Chroma(_Plan):
    """Necessary: some value of the item is the reader's (`_store_filters.chroma_where`), as
    Chroma's native `where`: LlamaIndex's Chroma store refuses `ANY`. Paged past
    `CHROMA_MOST_VALUES`."""

    def filter_for(self, scope_ids: frozenset[str]) -> ScopeFilter:
        where = chroma_where(self._key, scope_ids)
        return ScopeFilter() if where is None else ScopeFilter(store_kwargs={"where": where})


class _PGVectorStore(_Plan):
    """Exact, for any reader, in one query: the store's own vector query, with the readable-row
    condition beside its ordering and the reader's ids set for row-level security in the same
    transaction, sync or async on the store's own engines.

    Of the store's public routes, `customize_query_fn` is the one that reaches its SQL: its
    metadata filters cannot say "every scope is the reader's" (and write their values into the
    SQL text), and its engines and sessions are private. So the store is built with
    `pgvector_scoped_query` (`check_store` refuses one built without it), and the reader travels
    in the keyword arguments `query` hands that hook (`scoped_read`). With an HNSW index the
    iterative scan may return a page slightly out of distance order, as the store's own
    search would with it.
    """

    def filter_for(self, scope_ids: frozenset[str]) -> ScopeFilter:
        return ScopeFilter(store_kwargs=scoped_read(scope_ids, self._key))


class _Unfiltered(_Plan):
    """No filter (FAISS refuses every filter, and any store not listed has none of ours): the
    store's own ranking, paged and checked exactly."""

    def filter_for(self, scope_ids: frozenset[str]) -> ScopeFilter:
        return ScopeFilter()


def check_store(vector_store: BasePydanticVectorStore) -> None:
    """Refuse a store that cannot be asked for a reader's items, saying how to build it.

    LlamaIndex's `ChromaVectorStore` flattens metadata by default and refuses a list, and its
    constructor drops a `flat_metadata=False` keyword, so a user who asked for lists may still
    have flat metadata, with scopes either refused at ingestion or squeezed into one string. A
    `PGVectorStore` built without `pgvector_scoped_query` would take the reader's keyword
    argument and ignore it.
    """
    if _is_a(vector_store, _PGVECTOR) and not _scoped_pgvector(vector_store):
        raise ValueError(
            "scoped retrieval over a PGVectorStore asks the database for the reader's rows in "
            "the store's own query, through its customize_query_fn, and this store was built "
            "without it: build it with PGVectorStore(..., customize_query_fn="
            "pgvector_scoped_query) (or PGVectorStore.from_params(..., customize_query_fn="
            "pgvector_scoped_query)), from aizk_integrations.llama_index; it changes only "
            "scoped retrieval's queries"
        )
    if _is_a(vector_store, _CHROMA) and getattr(vector_store, "flat_metadata", False):
        raise ValueError(
            "scoped retrieval needs the scope ids stored as a list, and this index's "
            "ChromaVectorStore keeps flat metadata (flat_metadata=True), which refuses lists; "
            "set `vector_store.flat_metadata = False` on the store before adding nodes "
            "(ChromaVectorStore's constructor drops a flat_metadata keyword), then write "
            "scopes with scope_metadata"
        )


def _scoped_pgvector(vector_store: BasePydanticVectorStore) -> bool:
    """Whether the store was built with `pgvector_scoped_query`. PGVectorStore keeps the hook in
    a private attribute and has no accessor: reading it is the only way to refuse, before any
    query, a store whose queries would drop the reader without a word."""
    hook = getattr(vector_store, "_customize_query_fn", None)
    return hook is pgvector_scoped_query


def postgres_setup(
    vector_store: BasePydanticVectorStore, *, role: str, scopes_key: str = "scopes"
) -> list[str]:
    """The SQL a migration runs once, in order, as the owner of a `PGVectorStore`'s table, for
    scoped retrieval and row-level security: the scope keys function, a GIN index on the scopes
    and an HNSW index on the embeddings, the reader policy (forced on the owner too), and SELECT
    for `role`, the role the app queries as.

    Run it once the store has made its table (its first `add`): `for statement in
    postgres_setup(vector_store, role="app_reader"): connection.exec_driver_sql(statement)`.
    docs/postgres.md says what `role` must not be allowed to do.
    """
    if not _is_a(vector_store, _PGVECTOR):
        raise TypeError(
            f"postgres_setup takes LlamaIndex's PGVectorStore, not {type(vector_store).__name__}"
        )
    table = _postgres.llama_index_table(
        vector_store.table_name,  # type: ignore[attr-defined]  # PGVectorStore's own fields
        vector_store.schema_name,  # type: ignore[attr-defined]
    )
    return _postgres.setup(table, scopes_key, role)


def _is_a(vector_store: BasePydanticVectorStore, where: tuple[str, str]) -> bool:
    """Whether the store is an instance of that class, without importing its package: a package
    nobody has imported cannot have made the store."""
    module, name = where
    cls = getattr(sys.modules.get(module), name, None)
    return isinstance(cls, type) and isinstance(vector_store, cls)


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
