"""langchain-postgres's `PGVectorStore` (and its `AsyncPGVectorStore`), asked for one reader's
documents in one SQL query.

The store's filter language names its metadata columns, with no operator for "every scope of the
document is the reader's", and cannot read its JSON metadata column at all, so scoped retrieval
writes the query itself (`_postgres.search.columns_search`: the store's own search, its table,
columns and distance strategy, with the reader's condition), as it does for `PGVector`: in one
transaction, the reader's ids set for row-level security and whether the policy binds
(`_postgres.reading.START_READING`), then the search. It runs on the store's own engine, an
async SQLAlchemy engine whose connections belong to its `PGEngine`'s event loop, so it runs on
that loop as the store's own methods do: a sync call waits for it there, an async call awaits
it. SQLAlchemy is imported only once such a store is searched: the LangChain adapter loads no
database package by itself.

Where the scopes are read from is the store's layout, as its user made it (`StoreLayout`): a
metadata column of the store named as the scopes key (jsonb, json, text[] or text), else the
key in its JSON metadata column (`langchain_metadata` by default, json). A store with neither
cannot be asked for a reader's documents and is refused when the retriever is built.

langchain-postgres 0.0.19 exposes none of this publicly: `PGVectorStore` keeps its async store
(whose layout attributes are public) and its `PGEngine` in private attributes, and `PGEngine`
runs coroutines on its loop through `_run_as_sync` and `_run_as_async`, which its own modules
use. Those are read here, in `_wrapped` and `_on_the_stores_loop`, and nowhere else.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.documents import Document

from aizk_integrations._stores.plan import is_a
from aizk_integrations._stores.postgres.condition import reader_ids
from aizk_integrations._stores.postgres.names import StoreTable, plain_key
from aizk_integrations._stores.postgres.reading import (
    START_READING,
    explaining_a_missing_setup,
    reading,
    vector_text,
)
from aizk_integrations._stores.postgres.revisions import keeps_revision_ids, revision_setup
from aizk_integrations._stores.postgres.search import columns_search
from aizk_integrations._stores.postgres.setup import reader_setup

SYNC_STORE = ("langchain_postgres", "PGVectorStore")
ASYNC_STORE = ("langchain_postgres.v2.async_vectorstore", "AsyncPGVectorStore")


def holds(store: object) -> bool:
    """Whether `store` is one of langchain-postgres's `PGVectorStore` or `AsyncPGVectorStore`."""
    return is_a(store, *SYNC_STORE) or is_a(store, *ASYNC_STORE)


@dataclass(frozen=True)
class StoreLayout:
    """Where a `PGVectorStore` keeps a document, as its user made it: its table (with the
    scopes' column, or its JSON metadata column), the columns its documents are built from, and
    its distance strategy (by name)."""

    table: StoreTable
    id_column: str
    content_column: str
    metadata_columns: tuple[str, ...]
    json_column: str | None
    distance: str

    @classmethod
    def of(cls, store: Any, key: str) -> StoreLayout:
        """The layout of `store` for scopes under `key`, or an error saying how to make the
        store so that scoped retrieval can read them."""
        inner = _wrapped(store)
        plain_key(key)
        columns, json_column = tuple(inner.metadata_columns), inner.metadata_json_column
        if key not in columns and json_column is None:
            raise ValueError(
                f"scoped retrieval reads a document's scopes from the {key!r} metadata column "
                f"of a PGVectorStore or from its JSON metadata column, and the store of table "
                f"{inner.table_name!r} has neither: make it with metadata_columns=[{key!r}, ...] "
                "(a jsonb, json, text[] or text column) or with its JSON metadata column "
                "(metadata_json_column, 'langchain_metadata' by default, which "
                "init_vectorstore_table makes unless store_metadata=False)"
            )
        scopes_column = key if key in columns else None
        table = StoreTable(
            inner.schema_name,
            inner.table_name,
            metadata=json_column or key,
            embedding=inner.embedding_column,
            scopes_column=scopes_column,
        )
        return cls(
            table,
            inner.id_column,
            inner.content_column,
            columns,
            json_column,
            inner.distance_strategy.name,
        )

    @property
    def selected(self) -> list[str]:
        """The columns a search returns, as the store selects them (but its embedding)."""
        json_column = [] if self.json_column is None else [self.json_column]
        return [self.id_column, self.content_column, *self.metadata_columns, *json_column]

    def document(self, row: Any) -> Document:
        """A row as the store builds its document: the JSON metadata, then each metadata
        column over it."""
        metadata = dict(row[self.json_column] or {}) if self.json_column else {}
        metadata.update({column: row[column] for column in self.metadata_columns})
        return Document(
            id=str(row[self.id_column]), page_content=row[self.content_column], metadata=metadata
        )


def setup_statements(store: Any, role: str, key: str) -> list[str]:
    """`postgres_setup` of a `PGVectorStore`'s table: `reader_setup` of its layout, then, as
    `setup` adds for the other stores, what the MCP boundary reads a revision with, where the
    layout keeps the revision ids in its JSON metadata column (`keeps_revision_ids`)."""
    layout = StoreLayout.of(store, key)
    statements = reader_setup(layout.table, key, role)
    if keeps_revision_ids(layout.json_column, layout.metadata_columns):
        statements += revision_setup(layout.table, key, role, row_key=layout.id_column)
    return statements


class PGVectorStoreSearch:
    """Exact, for any reader, in one query: the documents of the store's table whose scopes are
    all the reader's, best first by the store's own distance strategy, built as the store builds
    them (id, content, metadata). The re-check after it passes every one.

    Dense search only: a store made with a hybrid search config is searched by its embeddings
    alone, and its `index_query_options` are not set (pgvector's iterative scan, which the
    transaction turns on, keeps an HNSW search from coming back short for a rare reader). An
    `AsyncPGVectorStore`, which has no loop of its own, serves async calls only.
    """

    def __init__(self, store: Any, key: str) -> None:
        self._store, self._key = store, key
        self._layout = StoreLayout.of(store, key)

    def search(self, query: str, top: int, scope_ids: frozenset[str]) -> list[Document]:
        if is_a(self._store, *ASYNC_STORE):
            raise ValueError(
                "an AsyncPGVectorStore serves only async calls: run scoped retrieval over it "
                "with ainvoke, or use langchain-postgres's PGVectorStore, which serves both"
            )
        embedding = self._store.embeddings.embed_query(query)
        rows = _on_the_stores_loop(self._store).sync(self._rows(embedding, top, scope_ids))
        return _documents(rows, self._layout)

    async def asearch(self, query: str, top: int, scope_ids: frozenset[str]) -> list[Document]:
        embedding = await self._store.embeddings.aembed_query(query)
        rows = self._rows(embedding, top, scope_ids)
        found = await _on_the_stores_loop(self._store).awaited(rows)
        return _documents(found, self._layout)

    async def _rows(
        self, embedding: list[float], top: int, scope_ids: frozenset[str]
    ) -> Sequence[Any]:
        import sqlalchemy  # here, not at the top: the adapter loads no database package itself

        ids = reader_ids(scope_ids)
        engine = _wrapped(self._store).engine
        with explaining_a_missing_setup():
            async with engine.begin() as connection:
                parameters = reading(ids, self._layout.table)
                started = await connection.execute(sqlalchemy.text(START_READING), parameters)
                sql = columns_search(
                    self._layout.table,
                    self._key,
                    self._layout.selected,
                    self._layout.distance,
                    policy=started.one()[-1],
                )
                statement = sqlalchemy.text(sql).bindparams(
                    embedding=vector_text(embedding), top=top
                )
                found: Sequence[Any] = (await connection.execute(statement)).mappings().all()
                return found


def _documents(rows: Sequence[Any], layout: StoreLayout) -> list[Document]:
    ranked = sorted(rows, key=lambda row: row["distance"])  # stable: ties keep the index's order
    return [layout.document(row) for row in ranked]


def _wrapped(store: Any) -> Any:
    """The `AsyncPGVectorStore` that holds the layout: the store itself, or the one a
    `PGVectorStore` wraps (in a private attribute: it has no public accessor)."""
    if is_a(store, *ASYNC_STORE):
        return store
    return store._PGVectorStore__vs  # langchain-postgres 0.0.19 has no public one


@dataclass(frozen=True)
class _Loop:
    """Where a coroutine on the store's engine runs: on its `PGEngine`'s loop, waited for from
    a sync caller or awaited from an async one (the engine's own private methods, which the
    store's methods use); an `AsyncPGVectorStore` in the caller's loop."""

    engine: Any

    def sync(self, coroutine: Any) -> Any:
        return self.engine._run_as_sync(coroutine)  # PGEngine's only seam

    async def awaited(self, coroutine: Any) -> Any:
        if self.engine is None:
            return await coroutine
        return await self.engine._run_as_async(coroutine)  # as above


def _on_the_stores_loop(store: Any) -> _Loop:
    if is_a(store, *ASYNC_STORE):
        return _Loop(None)
    return _Loop(store._engine)  # the store's PGEngine, kept private
