"""langchain-postgres's `PGVector`, asked for one reader's documents in one SQL query.

PGVector's own filter language cannot say "every scope of the document is the reader's" (`$in`
matches nothing on a list, `$eq` is exact equality), so scoped retrieval writes the query itself,
on the store's public parts: its `session_maker` (a sync or an async session, as the store was
made), its `EmbeddingStore` and `CollectionStore` tables, its `distance_strategy` and its
embeddings. The transaction first sets the reader's ids for row-level security and learns
whether the policy binds (`_postgres.START_READING`); the query then carries the readable-row
condition beside the vector ordering: the exact check, and the scopes index lookup where no
policy does it. Imported only once a `PGVector` is in hand: the LangChain adapter loads no
database package by itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy
from langchain_core.documents import Document
from langchain_core.runnables.config import run_in_executor

from aizk_integrations._postgres import (
    PGVECTOR_TABLE,
    START_READING,
    index_lookup,
    reader_ids,
    table_name,
    within_reader,
)


class PGVectorSearch:
    """Exact, for any reader, in one query: the documents of the store's collection whose scopes
    are all the reader's, best first by the store's own distance, built as PGVector builds them
    (id, text, metadata). The re-check after it passes every one.

    A store made with a sync engine is searched through its sync session (and async calls run
    that search on LangChain's executor, since such a store has no async session); one made with
    an async engine only through its async session. With an HNSW index, pgvector's iterative
    scan keeps an approximate search from coming back short for a rare reader; its relaxed
    order is restored here from the distances.
    """

    def __init__(self, store: Any, key: str) -> None:
        self._store = store
        self._within = sqlalchemy.text(within_reader(PGVECTOR_TABLE, key))
        self._lookup = sqlalchemy.text(index_lookup(PGVECTOR_TABLE, key))

    def search(self, query: str, top: int, scope_ids: frozenset[str]) -> list[Document]:
        if self._store.async_mode:
            raise ValueError(
                "this PGVector was made with an async engine, which serves only async calls: "
                "run scoped retrieval over it with ainvoke, or make the store with a sync "
                "engine (PGVector(connection=create_engine(...)))"
            )
        embedding = self._store.embeddings.embed_query(query)
        ids = reader_ids(scope_ids)
        with self._store.session_maker() as session, session.begin():
            connection = session.connection()  # Core: the rows are read, not ORM objects
            started = connection.execute(sqlalchemy.text(START_READING), _reading(ids))
            statement = self._statement(embedding, top, policy=started.one()[-1])
            rows = connection.execute(statement, {"reader_ids": ids}).all()
        return _documents(rows)

    async def asearch(self, query: str, top: int, scope_ids: frozenset[str]) -> list[Document]:
        if not self._store.async_mode:
            return await run_in_executor(None, self.search, query, top, scope_ids)
        if not hasattr(self._store, "EmbeddingStore"):
            # An async store learns its tables on its first async call; this is one.
            async with self._store.session_maker() as session:
                await self._store.aget_collection(session)
        embedding = await self._store.embeddings.aembed_query(query)
        ids = reader_ids(scope_ids)
        async with self._store.session_maker() as session, session.begin():
            started = await session.execute(sqlalchemy.text(START_READING), _reading(ids))
            statement = self._statement(embedding, top, policy=started.one()[-1])
            rows = (await session.execute(statement, {"reader_ids": ids})).all()
        return _documents(rows)

    def _statement(self, embedding: list[float], top: int, policy: bool) -> sqlalchemy.Select[Any]:
        """PGVector's own search (its collection, its distance, nearest first) with the
        reader's condition beside it, the index lookup too unless the `policy` does it; the
        collection is joined by name, in the same query."""
        rows, collections = self._store.EmbeddingStore, self._store.CollectionStore
        distance = self._store.distance_strategy(embedding).label("distance")
        condition = [self._within] if policy else [self._lookup, self._within]
        return (
            sqlalchemy.select(rows.id, rows.document, rows.cmetadata, distance)
            .join(collections, rows.collection_id == collections.uuid)
            .where(collections.name == self._store.collection_name, *condition)
            .order_by(sqlalchemy.asc("distance"))
            .limit(top)
        )


_TABLE = table_name(PGVECTOR_TABLE)


def _reading(ids: str) -> dict[str, str]:
    return {"reader_ids": ids, "table": _TABLE}


def _documents(rows: Sequence[Any]) -> list[Document]:
    ranked = sorted(rows, key=lambda row: row.distance)  # stable: ties keep the index's order
    return [
        Document(id=str(row.id), page_content=row.document, metadata=row.cmetadata)
        for row in ranked
    ]
