"""LlamaIndex's `PGVectorStore`, asked for one reader's nodes in one SQL query of our own.

The store's metadata filters cannot say "every scope of the node is the reader's" (and paste
their values into the SQL text), so scoped retrieval writes the query itself, as the LangChain
side does for `PGVector`: in one transaction, the reader's ids set for row-level security and
whether the policy binds (`_postgres.reading.START_READING`), then the store's own search with
the readable-row condition beside its vector ordering (`_postgres.search.pgvectorstore_search`),
the rows
built into nodes as the store builds them. Nothing is added to the store or to SQLAlchemy: the
app's own queries of the store, and every other engine of the process, run as they would
without this library.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import sqlalchemy
from llama_index.core.schema import BaseNode, NodeWithScore, TextNode
from llama_index.core.vector_stores.utils import metadata_dict_to_node

from aizk_integrations._stores.postgres.condition import reader_ids
from aizk_integrations._stores.postgres.names import llama_index_table
from aizk_integrations._stores.postgres.reading import (
    START_READING,
    explaining_a_missing_setup,
    reading,
    vector_text,
)
from aizk_integrations._stores.postgres.search import HNSW_SEARCH, pgvectorstore_search


class PGVectorStoreSearch:
    """Exact, for any reader, in one query: the nodes of the store's table whose scopes are all
    the reader's, best first by the store's own distance, each built as the store's `query`
    builds it (node, text, metadata, score `1 - distance`). The re-check after it passes every
    one.

    The query runs on an engine of ours, made once, when the retriever is built, from the
    store's public settings (`connection_string`, `create_engine_kwargs`, `debug`), as the store
    makes its own. The store keeps its engines in private attributes, and its public `client`
    is its sync engine only once the store has set itself up on a query of its own: reading
    them would be reaching into the framework. So a store built from engine objects, which has
    no connection string, is refused, saying how to build it. The engine lives as long as the
    retriever and its `for_reader` copies, which share it; a per-store cache would have to key
    on the store object's identity (the store is not hashable) or be written onto the store.

    Async calls run the same search on a worker thread. An async engine of ours would belong
    to the event loop that first used it, and, the store's `close()` not knowing it, nothing
    would close its connections (asyncpg warns about each at collection); a sync engine's are
    closed with it. With an HNSW index the iterative scan may return a page slightly out of
    distance order; the order is restored here from the distances.
    """

    def __init__(self, store: Any, key: str) -> None:
        if store.connection_string in ("", "None"):  # PGVectorStore keeps str(None)
            raise ValueError(
                "scoped retrieval over a PGVectorStore queries the database on an engine of "
                "its own, made from the store's connection_string and create_engine_kwargs "
                "(the store keeps its engines private), and this store was built from engine "
                "objects, without a connection string: build it with PGVectorStore("
                "connection_string=..., async_connection_string=..., create_engine_kwargs="
                "{...pool settings}) or PGVectorStore.from_params(...)"
            )
        self._store, self._key = store, key
        self._table = llama_index_table(store.table_name, store.schema_name)
        self._engine = sqlalchemy.create_engine(
            store.connection_string, echo=store.debug, **store.create_engine_kwargs
        )

    def search(
        self, embedding: list[float], top: int, scope_ids: frozenset[str]
    ) -> list[NodeWithScore]:
        ids = reader_ids(scope_ids)
        with explaining_a_missing_setup(), self._engine.begin() as connection:
            started = connection.execute(sqlalchemy.text(START_READING), reading(ids, self._table))
            if self._store.hnsw_kwargs:
                ef_search = str(int(self._store.hnsw_kwargs["hnsw_ef_search"]))
                connection.execute(sqlalchemy.text(HNSW_SEARCH), {"ef_search": ef_search})
            statement = self._statement(embedding, top, policy=started.one()[-1])
            rows = connection.execute(statement).all()
        return _scored(rows)

    async def asearch(
        self, embedding: list[float], top: int, scope_ids: frozenset[str]
    ) -> list[NodeWithScore]:
        return await asyncio.to_thread(self.search, embedding, top, scope_ids)

    def _statement(
        self,
        embedding: list[float],
        top: int,
        *,
        policy: bool,
    ) -> sqlalchemy.TextClause:
        sql = pgvectorstore_search(
            self._table,
            self._key,
            halfvec=self._store.use_halfvec,
            policy=policy,
        )
        return sqlalchemy.text(sql).bindparams(embedding=vector_text(embedding), top=top)


def _scored(rows: Sequence[Any]) -> list[NodeWithScore]:
    """The rows as the store's `query` returns them, nearest first (stable: ties keep the
    index's order; a row without an embedding, whose distance is NULL, last, scored 0)."""
    ranked = sorted(rows, key=lambda row: (row.distance is None, row.distance or 0.0))
    return [
        NodeWithScore(node=_node(row), score=0.0 if row.distance is None else 1 - row.distance)
        for row in ranked
    ]


def _node(row: Any) -> BaseNode:
    """A node as `PGVectorStore` builds one from its row: the node it serialised into the
    metadata, given the row's text; a row that holds no serialised node (written by hand, or
    by an old version) as a plain `TextNode` of the row's id, text and metadata."""
    try:
        node = metadata_dict_to_node(row.metadata_)
        node.set_content(str(row.text))
    except Exception:  # the store falls back on any failure, and so do we
        return TextNode(id_=row.node_id, text=row.text, metadata=row.metadata_)
    return node
