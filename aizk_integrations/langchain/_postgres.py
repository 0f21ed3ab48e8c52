"""langchain-postgres's `PGVector`, asked for one reader's documents in one SQL query.

PGVector's own filter language cannot say "every scope of the document is the reader's" (`$in`
matches nothing on a list, `$eq` is exact equality), so scoped retrieval writes the query itself
(`_postgres.search.PGVECTOR_SEARCH`, the store's own search with the reader's condition), on
the store's public parts: the engine of its `session_maker` (sync or async, as the store was
made), its collection name, its `distance_strategy` and its embeddings. The transaction first
sets the reader's ids for row-level security and learns whether the policy binds
(`_postgres.reading.START_READING`); the query then carries the readable-row condition beside
the vector ordering: the index lookup and the exact check where no policy binds, the exact
check as a guard where one does (`_postgres.condition.reader_condition`). Imported only once a
`PGVector` is in hand: the LangChain adapter loads no database package by itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy
from langchain_core.documents import Document
from langchain_core.runnables.config import run_in_executor

from aizk_integrations._stores.postgres.condition import reader_ids
from aizk_integrations._stores.postgres.names import PGVECTOR_TABLE
from aizk_integrations._stores.postgres.reading import (
    START_READING,
    explaining_a_missing_setup,
    reading,
    vector_text,
)
from aizk_integrations._stores.postgres.search import pgvector_search


class PGVectorSearch:
    """Exact, for any reader, in one query: the documents of the store's collection whose scopes
    are all the reader's, best first by the store's own distance, built as PGVector builds them
    (id, text, metadata). The re-check after it passes every one.

    A store made with a sync engine is searched on its sync session's engine (and async calls
    run that search on LangChain's executor, since such a store has no async session); one made
    with an async engine only on its async session's. With an HNSW index, pgvector's iterative
    scan keeps an approximate search from coming back short for a rare reader; its relaxed order
    is restored here from the distances.
    """

    def __init__(self, store: Any, key: str) -> None:
        self._store, self._key = store, key

    def search(self, query: str, top: int, scope_ids: frozenset[str]) -> list[Document]:
        if self._store.async_mode:
            raise ValueError(
                "this PGVector was made with an async engine, which serves only async calls: "
                "run scoped retrieval over it with ainvoke, or make the store with a sync "
                "engine (PGVector(connection=create_engine(...)))"
            )
        embedding = self._store.embeddings.embed_query(query)
        ids = reader_ids(scope_ids)
        engine = self._store.session_maker.get_bind()
        with explaining_a_missing_setup(), engine.begin() as connection:
            started = connection.execute(
                sqlalchemy.text(START_READING), reading(ids, PGVECTOR_TABLE)
            )
            statement = self._statement(embedding, top, policy=started.one()[-1])
            rows = connection.execute(statement).all()
        return _documents(rows)

    async def asearch(self, query: str, top: int, scope_ids: frozenset[str]) -> list[Document]:
        if not self._store.async_mode:
            return await run_in_executor(None, self.search, query, top, scope_ids)
        if not hasattr(self._store, "EmbeddingStore"):
            # An async store learns its tables, and so its distance, on its first async call.
            async with self._store.session_maker() as session:
                await self._store.aget_collection(session)
        embedding = await self._store.embeddings.aembed_query(query)
        ids = reader_ids(scope_ids)
        async with self._store.session_maker() as session:
            engine = session.bind
        with explaining_a_missing_setup():
            async with engine.begin() as connection:
                parameters = reading(ids, PGVECTOR_TABLE)
                started = await connection.execute(sqlalchemy.text(START_READING), parameters)
                statement = self._statement(embedding, top, policy=started.one()[-1])
                rows = (await connection.execute(statement)).all()
        return _documents(rows)

    def _statement(
        self,
        embedding: list[float],
        top: int,
        *,
        policy: bool,
    ) -> sqlalchemy.TextClause:
        distance = self._store.distance_strategy.__name__
        sql = pgvector_search(self._key, distance, policy=policy)
        return sqlalchemy.text(sql).bindparams(
            embedding=vector_text(embedding),
            collection=self._store.collection_name,
            top=top,
        )


def _documents(rows: Sequence[Any]) -> list[Document]:
    ranked = sorted(rows, key=lambda row: row.distance)  # stable: ties keep the index's order
    return [
        Document(id=str(row.id), page_content=row.document, metadata=row.cmetadata)
        for row in ranked
    ]
