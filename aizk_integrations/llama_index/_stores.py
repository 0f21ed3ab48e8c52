"""How each vector store is asked for no more than one reader may read, and kept quiet about it.

A reader may read an item when every one of its scopes is theirs. A store that can say exactly
that is asked exactly; one that can say only "some scope of the item is the reader's" (a
necessary condition) is asked that, and scoped retrieval re-checks what comes back; one that
takes no filter at all is paged. Which store is which was measured on each one's own filter
code, not assumed from the operator names, which mean different things on a list in different
stores.

The store packages are never imported here until a store of theirs is in hand: a user of one
store installs no other.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from llama_index.core.vector_stores import (
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    SimpleVectorStore,
)
from llama_index.core.vector_stores.types import BasePydanticVectorStore
from pydantic import BaseModel, ConfigDict, Field

_CHROMA = ("llama_index.vector_stores.chroma", "ChromaVectorStore")
_QDRANT = ("llama_index.vector_stores.qdrant", "QdrantVectorStore")


class ScopeFilter(BaseModel):
    """What narrows one vector store query to the items a reader may read.

    The answer a `scoped_query` gives, for a reader's scope ids, for a store the library does not
    know (pgvector, Pinecone, Weaviate, Elasticsearch...): LlamaIndex metadata `filters`, the
    store's own query keyword arguments (`store_kwargs`), or both. Best is exactly "every scope
    of the item is one of these"; any condition every readable item meets is safe, because what
    the store returns is checked again exactly before it is returned, but a weaker one costs
    pages. An empty `ScopeFilter()` pages through the whole store.
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


def built_in_filter(
    vector_store: BasePydanticVectorStore, scope_ids: frozenset[str], scopes_key: str
) -> ScopeFilter:
    """The narrowest condition each supported store can express for a reader's scope ids.

    - Qdrant, exactly: some scope of the item is the reader's (`MatchAny`) and none is outside
      (`must_not` `MatchExcept`, which on a list means "some element is none of these").
      Passed as Qdrant's own filter rather than as LlamaIndex's IN and NOT(NIN), which the
      Qdrant store happens to translate into the same thing but which on a list mean something
      else in other stores; the same filter serves a Qdrant server.
    - `SimpleVectorStore`, necessarily: `FilterOperator.ANY`, some scope is the reader's. It
      has no operator for "every scope of the item is in these", and takes no nested filters.
    - Chroma, necessarily: `$contains` each of the reader's ids, joined with `$or`, as its
      native `where`: LlamaIndex's Chroma store refuses `ANY`.
    - FAISS, and any store not listed: no filter (FAISS refuses every filter), so paging.
    """
    ids = sorted(scope_ids)
    if _is_a(vector_store, _QDRANT):
        from qdrant_client.http import models

        return ScopeFilter(
            store_kwargs={
                "qdrant_filters": models.Filter(
                    must=[models.FieldCondition(key=scopes_key, match=models.MatchAny(any=ids))],
                    must_not=[
                        models.FieldCondition(
                            key=scopes_key, match=models.MatchExcept(**{"except": ids})
                        )
                    ],
                )
            }
        )
    if isinstance(vector_store, SimpleVectorStore):
        return ScopeFilter(
            filters=MetadataFilters(
                filters=[MetadataFilter(key=scopes_key, operator=FilterOperator.ANY, value=ids)]
            )
        )
    if _is_a(vector_store, _CHROMA):
        clauses = [{scopes_key: {"$contains": each}} for each in ids]
        where = clauses[0] if len(clauses) == 1 else {"$or": clauses}  # $or needs two or more
        return ScopeFilter(store_kwargs={"where": where})
    return ScopeFilter()


def check_store(vector_store: BasePydanticVectorStore) -> None:
    """Refuse a store whose ingestion cannot have kept the list of scope ids.

    LlamaIndex's `ChromaVectorStore` flattens metadata by default and refuses a list, and its
    constructor drops a `flat_metadata=False` keyword, so a user who asked for lists may still
    have flat metadata, with scopes either refused at ingestion or squeezed into one string.
    """
    if _is_a(vector_store, _CHROMA) and getattr(vector_store, "flat_metadata", False):
        raise ValueError(
            "scoped retrieval needs the scope ids stored as a list, and this index's "
            "ChromaVectorStore keeps flat metadata (flat_metadata=True), which refuses lists; "
            "set `vector_store.flat_metadata = False` on the store before adding nodes "
            "(ChromaVectorStore's constructor drops a flat_metadata keyword), then write "
            "scopes with scope_metadata"
        )


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
