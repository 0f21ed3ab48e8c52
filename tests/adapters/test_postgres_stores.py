"""Both frameworks' Postgres stores on a real server, sync and async: each keeps a document's
scopes where the readable-row condition and the scopes index read them, and under the row-level
security policy each store's own unfiltered search returns only the request's reader's documents.

The reader reaches the policy through a listener on the engine's `begin` event, which runs
`SET_READER_IDS` at the start of every transaction the store opens: both stores take an engine
the app made (`PGVector(connection=engine)`, `PGVectorStore(engine=..., async_engine=...)`).
Both are made with their default setup, as the app's role: with their tables in place, setup
finds everything there and needs no more than the role's SELECT.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_postgres import PGVector
from llama_index.core.schema import BaseNode, TextNode
from llama_index.core.vector_stores import VectorStoreQuery
from llama_index.vector_stores.postgres import PGVectorStore
from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from aizk_integrations._stores.postgres.condition import readable_row, reader_ids
from aizk_integrations._stores.postgres.names import PGVECTOR_TABLE, StoreTable, llama_index_table
from aizk_integrations._stores.postgres.reading import SET_READER_IDS
from aizk_integrations._stores.postgres.setup import (
    embedding_index,
    reading_grants,
    row_security,
    scope_ids_column,
    scope_ids_functions,
    scopes_index,
)
from tests.postgres import Server, fresh_database
from tests.scoped_corpus import DIMENSIONS, READERS, hash_vector, notes, organizations_of
from tests.scoped_corpus import readable_by as notes_readable_by

APP = "aizk_stores_app"
STORED = notes(120)
READER = READERS[3]
EMBEDDING = DeterministicFakeEmbedding(size=DIMENSIONS)
_reading: ContextVar[str | None] = ContextVar("aizk_test_reading", default=None)
_Engine = TypeVar("_Engine", Engine, AsyncEngine)


def _readable_texts(reader: str) -> set[str]:
    return {note.text for note in notes_readable_by(reader, STORED)}


def _set_reader(connection: Connection) -> None:
    """The engine's `begin` listener: the request's reader, for the policy, in this transaction."""
    reader = _reading.get()
    if reader is not None:
        ids = reader_ids({reader, *organizations_of(reader)})
        connection.execute(text(SET_READER_IDS), {"reader_ids": ids})


@contextmanager
def policy_reads_as(reader: str | None) -> Iterator[None]:
    """The request's reader, in the app's own context variable its `begin` listener reads (an
    app's plumbing, not an aizk API)."""
    token = _reading.set(reader)
    try:
        yield
    finally:
        _reading.reset(token)


def _reads(engine: _Engine) -> _Engine:
    target = engine.sync_engine if isinstance(engine, AsyncEngine) else engine
    event.listen(target, "begin", _set_reader)
    return engine


@pytest.fixture(scope="module")
def server(postgres_server: Server) -> Iterator[Server]:
    with fresh_database(postgres_server, "aizk_stores") as database:
        engine = create_engine(database.url())
        with engine.begin() as connection:
            connection.execute(text(f"CREATE ROLE {APP} LOGIN NOBYPASSRLS"))
        try:
            yield database
        finally:
            with engine.begin() as connection:
                connection.execute(text(f"DROP OWNED BY {APP}"))
            engine.dispose()
    cluster = create_engine(postgres_server.url())
    with cluster.begin() as connection:
        connection.execute(text(f"DROP ROLE {APP}"))
    cluster.dispose()


def _secure(server: Server, table: StoreTable) -> None:
    """Index `table`, put it under the policy and let the app's role read it, as a migration
    would."""
    statements = [*scope_ids_functions(table), scope_ids_column(table, "scopes")]
    statements += [scopes_index(table, "scopes")]
    statements += [embedding_index(table), *row_security(table, "scopes")]
    statements += reading_grants(APP, table)
    engine = create_engine(server.url())
    try:
        with engine.begin() as connection:
            for statement in statements:
                connection.exec_driver_sql(statement)
            connection.exec_driver_sql(f'ANALYZE "{table.schema}"."{table.name}"')
    finally:
        engine.dispose()


def _scopes_index_serves(server: Server, table: StoreTable) -> bool:
    """Whether the condition can be answered through `table`'s scopes index (a table this small
    is otherwise scanned, so scans are turned off)."""
    condition = readable_row(table, "scopes")
    query = text(f'EXPLAIN SELECT 1 FROM "{table.schema}"."{table.name}" WHERE {condition}')
    engine = create_engine(server.url())
    try:
        with engine.begin() as connection:
            connection.execute(text("SET LOCAL enable_seqscan = off"))
            plan = connection.execute(query, {"reader_ids": reader_ids(["sam"])}).scalars()
            return any(
                f"Bitmap Index Scan on {table.name}_aizk_scopes_ids" in line for line in plan
            )
    finally:
        engine.dispose()


def _condition_finds(server: Server, table: StoreTable, text_column: str, reader: str) -> set[str]:
    """The texts of `table` the readable-row condition lets `reader` read (as a superuser)."""
    condition = readable_row(table, "scopes")
    query = text(f'SELECT {text_column} FROM "{table.schema}"."{table.name}" WHERE {condition}')
    ids = reader_ids({reader, *organizations_of(reader)})
    engine = create_engine(server.url())
    try:
        with engine.connect() as connection:
            return set(connection.execute(query, {"reader_ids": ids}).scalars())
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def pgvector(server: Server) -> StoreTable:
    """PGVector's table, filled half by a sync store and half by an async one, then secured."""
    documents = [Document(note.text, metadata=note.metadata) for note in STORED]
    engine = create_engine(server.url())
    store = PGVector(
        embeddings=EMBEDDING,
        connection=engine,
        collection_name="notes",
        embedding_length=DIMENSIONS,
        use_jsonb=True,
    )
    store.add_documents(documents[::2])
    engine.dispose()

    async def add_async() -> None:
        engine = create_async_engine(server.url())
        async_store = PGVector(
            embeddings=EMBEDDING, connection=engine, collection_name="notes", use_jsonb=True
        )
        await async_store.aadd_documents(documents[1::2])
        await engine.dispose()

    asyncio.run(add_async())
    _secure(server, PGVECTOR_TABLE)
    return PGVECTOR_TABLE


def test_pgvector_keeps_scopes_in_its_jsonb_metadata_where_the_condition_reads_them(
    server: Server, pgvector: StoreTable
) -> None:
    assert _condition_finds(server, pgvector, "document", READER) == _readable_texts(READER)
    assert _scopes_index_serves(server, pgvector)


def test_under_the_policy_pgvectors_own_unfiltered_search_returns_only_the_readers_documents(
    server: Server, pgvector: StoreTable
) -> None:
    engine = _reads(create_engine(server.url(user=APP)))
    store = PGVector(embeddings=EMBEDDING, connection=engine, collection_name="notes")
    try:
        with policy_reads_as(READER):
            found = store.similarity_search("garden", k=len(STORED))
        with policy_reads_as(None):
            nothing = store.similarity_search("garden", k=len(STORED))
    finally:
        engine.dispose()
    assert {document.page_content for document in found} == _readable_texts(READER)
    assert nothing == []


def test_under_the_policy_pgvectors_async_search_returns_only_the_readers_documents(
    server: Server, pgvector: StoreTable
) -> None:
    async def search(reader: str | None) -> set[str]:
        engine = _reads(create_async_engine(server.url(user=APP)))
        store = PGVector(
            embeddings=EMBEDDING,
            connection=engine,
            collection_name="notes",
            async_mode=True,
        )
        try:
            with policy_reads_as(reader):
                found = await store.asimilarity_search("garden", k=len(STORED))
        finally:
            await engine.dispose()
        return {document.page_content for document in found}

    assert asyncio.run(search(READER)) == _readable_texts(READER)
    assert asyncio.run(search(None)) == set()


def _nodes() -> list[BaseNode]:
    return [
        TextNode(text=note.text, metadata=note.metadata, embedding=hash_vector(note.text))
        for note in STORED
    ]


@pytest.fixture(scope="module", params=[False, True], ids=["json", "jsonb"])
def llama_index(request: pytest.FixtureRequest, server: Server) -> tuple[StoreTable, bool]:
    """A `PGVectorStore` table (json metadata by default, jsonb on request), filled half by the
    sync path and half by the async one, then secured."""
    use_jsonb: bool = request.param
    table_name = f"notes_{'jsonb' if use_jsonb else 'json'}"
    store = PGVectorStore.from_params(
        host=server.host,
        port=str(server.port),
        database=server.dbname,
        user=server.user,
        password="",
        table_name=table_name,
        embed_dim=DIMENSIONS,
        use_jsonb=use_jsonb,
    )
    nodes = _nodes()
    store.add(nodes[::2])

    async def add_async() -> None:
        await store.async_add(nodes[1::2])
        await store.close()

    asyncio.run(add_async())
    table = llama_index_table(table_name)
    _secure(server, table)
    return table, use_jsonb


def test_pgvectorstore_keeps_scopes_in_its_metadata_column_where_the_condition_reads_them(
    server: Server, llama_index: tuple[StoreTable, bool]
) -> None:
    table, _ = llama_index
    assert _condition_finds(server, table, "text", READER) == _readable_texts(READER)
    assert _scopes_index_serves(server, table)


def test_under_the_policy_pgvectorstores_own_unfiltered_queries_return_only_the_readers_nodes(
    server: Server, llama_index: tuple[StoreTable, bool]
) -> None:
    table, use_jsonb = llama_index
    query = VectorStoreQuery(query_embedding=hash_vector("garden"), similarity_top_k=len(STORED))

    async def run() -> dict[str, set[str]]:
        engine = _reads(create_engine(server.url(user=APP)))
        async_engine = _reads(create_async_engine(server.url("asyncpg", user=APP)))
        store = PGVectorStore(
            engine=engine,
            async_engine=async_engine,
            table_name=table.name.removeprefix("data_"),
            embed_dim=DIMENSIONS,
            use_jsonb=use_jsonb,
            initialization_fail_on_error=True,  # its setup, as the app's role, must not fail
        )
        try:
            answers = {}
            for reader in (READER, None):
                with policy_reads_as(reader):
                    answers[f"sync {reader}"] = store.query(query).nodes or []
                    answers[f"async {reader}"] = (await store.aquery(query)).nodes or []
        finally:
            await store.close()
        return {name: {node.get_content() for node in nodes} for name, nodes in answers.items()}

    answers = asyncio.run(run())
    assert answers == {
        f"sync {READER}": _readable_texts(READER),
        f"async {READER}": _readable_texts(READER),
        "sync None": set(),
        "async None": set(),
    }
