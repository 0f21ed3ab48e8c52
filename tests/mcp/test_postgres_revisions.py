"""The revision SQL `postgres_setup` adds, run on a real server as the app's role: the owner's
function answers a revision's row keys only when every row is the reader's, the database itself
refuses the app's role a foreign row, and nothing the app's role sets opens the function's own
policy to it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_postgres import PGEngine, PGVector
from langchain_postgres import PGVectorStore as LangChainPGVectorStore
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from sqlalchemy import Connection, create_engine, text

from aizk_integrations._stores.postgres.condition import reader_ids
from aizk_integrations._stores.postgres.names import (
    PGVECTOR_TABLE,
    StoreTable,
    llama_index_table,
)
from aizk_integrations._stores.postgres.reading import SET_READER_IDS
from aizk_integrations._stores.postgres.revisions import (
    ROW_KEY,
    read_columns,
    read_rows,
    revision_keys_of,
    revision_rows_function,
)
from aizk_integrations.langchain import postgres_setup
from aizk_integrations.llama_index import postgres_setup as llama_index_postgres_setup
from tests.adapters.postgres_stores import app_database, owner_pgvectorstore
from tests.mcp.corpus import (
    ANA_REVISION,
    MIXED_REVISION,
    NOWHERE,
    SAM_REVISION,
    SPELLED_REVISION,
    reader,
)
from tests.mcp.stores import LANGCHAIN_DIMENSIONS, LLAMA_INDEX_DIMENSIONS, documents, nodes
from tests.postgres import Server

APP = "aizk_mcp_sql_app"
LANGCHAIN_TABLE = "mcp_langchain"
OWNER = "aizk_mcp_sql_owner"


@dataclass(frozen=True)
class Table:
    """One framework's Postgres table, and how its rows are read back."""

    table: StoreTable
    text: str
    key_type: str
    collection: bool
    row_key: str = ROW_KEY
    """Set for langchain-postgres's `PGVectorStore`, read by its id column (`read_columns`)."""

    def rows(self, keys: list[str]) -> tuple[str, dict[str, Any]]:
        if self.row_key != ROW_KEY:
            return read_columns(self.table, self.row_key, [self.row_key, self.text]), {"keys": keys}
        sql = read_rows(self.table, self.text, self.key_type, collection=self.collection)
        return sql, {"keys": keys, **({"collection": "mcp"} if self.collection else {})}

    def keys_of(self, revision: tuple[str, str]) -> tuple[str, dict[str, Any]]:
        ids = {"artifact_id": revision[0], "artifact_content_id": revision[1]}
        return revision_keys_of(self.table), ids


TABLES = {
    "pgvector": Table(PGVECTOR_TABLE, "document", "varchar", collection=True),
    "pgvectorstore": Table(llama_index_table("mcp"), "text", "bigint", collection=False),
    "pgvectorstore-jsonb": Table(
        llama_index_table("mcp_jsonb"), "text", "bigint", collection=False
    ),
    "langchain-pgvectorstore": Table(
        StoreTable("public", LANGCHAIN_TABLE, metadata="langchain_metadata"),
        "content",
        "uuid",
        collection=False,
        row_key="langchain_id",
    ),
}
"""PGVector keeps its metadata as jsonb, LlamaIndex's PGVectorStore as json unless made with
`use_jsonb=True`, langchain-postgres's PGVectorStore as json: both column types, in every kind
of table."""


@pytest.fixture(scope="module")
def database(postgres_server: Server) -> Iterator[Server]:
    """The corpus in PGVector's tables and in a PGVectorStore's, owned (after ingestion) by a
    role that is no superuser, as on a managed database, which then runs the setup: so the
    policy binds the owner too, and the function reads as it will in production."""
    cluster = create_engine(postgres_server.url())
    with cluster.begin() as connection:
        connection.exec_driver_sql(f'CREATE ROLE "{OWNER}" LOGIN NOBYPASSRLS')
    try:
        with app_database(postgres_server, "aizk_mcp_sql", APP) as database:
            _ingest(database)
            yield database
    finally:
        with cluster.begin() as connection:
            connection.exec_driver_sql(f'DROP ROLE "{OWNER}"')
        cluster.dispose()


@pytest.fixture(params=sorted(TABLES))
def table(request: pytest.FixtureRequest) -> Table:
    return TABLES[request.param]


def _ingest(database: Server) -> None:
    superuser = create_engine(database.url())
    owner = create_engine(database.url(user=OWNER))
    try:
        pgvector = PGVector(
            embeddings=DeterministicFakeEmbedding(size=LANGCHAIN_DIMENSIONS),
            connection=superuser,
            collection_name="mcp",
            embedding_length=LANGCHAIN_DIMENSIONS,
        )
        corpus = documents()
        pgvector.add_documents(corpus, ids=[document.id or "" for document in corpus])
        statements = postgres_setup(pgvector, role=APP)
        for table_name, use_jsonb in (("mcp", False), ("mcp_jsonb", True)):
            pgvectorstore = owner_pgvectorstore(
                database, table_name, embed_dim=LLAMA_INDEX_DIMENSIONS, use_jsonb=use_jsonb
            )
            VectorStoreIndex(
                nodes(),
                storage_context=StorageContext.from_defaults(vector_store=pgvectorstore),
                embed_model=MockEmbedding(embed_dim=LLAMA_INDEX_DIMENSIONS),
            )
            asyncio.run(pgvectorstore.close())
            statements += llama_index_postgres_setup(pgvectorstore, role=APP)
        statements += _langchain_pgvectorstore(database)
        names = [
            PGVECTOR_TABLE.name,
            *PGVECTOR_TABLE.also_read,
            *(table.table.name for table in TABLES.values() if not table.collection),
        ]
        with superuser.begin() as connection:
            connection.exec_driver_sql(f'GRANT CREATE ON SCHEMA public TO "{OWNER}"')
            for name in names:
                connection.exec_driver_sql(f'ALTER TABLE public."{name}" OWNER TO "{OWNER}"')
        with owner.begin() as connection:
            for statement in statements:
                connection.exec_driver_sql(statement)
            for name in names:
                connection.exec_driver_sql(f'ANALYZE public."{name}"')
    finally:
        superuser.dispose()
        owner.dispose()


def _langchain_pgvectorstore(database: Server) -> list[str]:
    """The corpus in langchain-postgres's `PGVectorStore`, in its default layout; its setup."""
    engine = PGEngine.from_connection_string(database.url("asyncpg"))
    try:
        engine.init_vectorstore_table(LANGCHAIN_TABLE, LANGCHAIN_DIMENSIONS)
        store = LangChainPGVectorStore.create_sync(
            engine, DeterministicFakeEmbedding(size=LANGCHAIN_DIMENSIONS), LANGCHAIN_TABLE
        )
        store.add_documents(documents())
        return postgres_setup(store, role=APP)
    finally:
        asyncio.run(engine.close())


def as_app(database: Server, user: str, *statements: tuple[str, dict[str, Any]]) -> list[Any]:
    """Each statement's rows, run by the app's role in one transaction with `user`'s ids set."""
    engine = create_engine(database.url(user=APP))
    try:
        with engine.begin() as connection:
            ids = reader_ids(reader(user).scopes.keys())
            connection.execute(text(SET_READER_IDS), {"reader_ids": ids})
            return [
                _rows(connection, sql, {"reader_ids": ids, **values}) for sql, values in statements
            ]
    finally:
        engine.dispose()


def _rows(connection: Connection, sql: str, values: dict[str, Any]) -> list[Any]:
    return [tuple(row) for row in connection.execute(text(sql), values).all()]


def test_the_function_answers_the_keys_of_a_revision_whose_every_row_is_the_readers(
    database: Server, table: Table
) -> None:
    [[(_, keys)], [(_, spelled)]] = as_app(
        database, "sam", table.keys_of(SAM_REVISION), table.keys_of(SPELLED_REVISION)
    )
    assert keys is not None
    assert len(keys) == 2
    assert keys == sorted(keys)
    assert spelled is not None
    assert len(spelled) == 2


@pytest.mark.parametrize(
    ("user", "revision"),
    [("sam", ANA_REVISION), ("ana", MIXED_REVISION), ("sam", NOWHERE)],
)
def test_the_function_answers_null_for_a_foreign_a_mixed_and_an_absent_revision(
    database: Server, table: Table, user: str, revision: tuple[str, str]
) -> None:
    [[(_, found)]] = as_app(database, user, table.keys_of(revision))
    assert found is None


def test_the_database_refuses_the_app_role_another_readers_rows_read_by_key(
    database: Server, table: Table
) -> None:
    [[(_, keys)]] = as_app(database, "ana", table.keys_of(ANA_REVISION))
    assert as_app(database, "sam", table.rows(keys)) == [[]]
    assert len(as_app(database, "ana", table.rows(keys))[0]) == 1


def test_the_app_role_cannot_open_the_functions_policy_by_its_settings(
    database: Server, table: Table
) -> None:
    opened = (
        "SELECT set_config('aizk.revision_check', 'on', true),"
        " set_config('aizk.revision_artifact_id', :artifact_id, true),"
        " set_config('aizk.revision_artifact_content_id', :artifact_content_id, true)",
        {"artifact_id": ANA_REVISION[0], "artifact_content_id": ANA_REVISION[1]},
    )
    count: tuple[str, dict[str, Any]] = (
        f'SELECT count(*) FROM "public"."{table.table.name}"',
        {},
    )
    [_, [(seen,)]] = as_app(database, "sam", opened, count)
    [[(own,)]] = as_app(database, "sam", count)
    assert seen == own


def test_the_function_runs_as_its_owner_with_a_fixed_search_path(
    database: Server, table: Table
) -> None:
    name = revision_rows_function(table.table)
    check = (
        "SELECT prosecdef, proconfig FROM pg_proc WHERE oid = CAST(:name AS regproc)",
        {"name": name},
    )
    [[(definer, config)]] = as_app(database, "sam", check)
    assert definer
    assert "search_path=pg_catalog, pg_temp" in config


def test_the_revision_is_looked_up_in_its_index(database: Server, table: Table) -> None:
    """As the function reads it (its owner, its settings on), the revision drives the index."""
    owner = create_engine(database.url(user=OWNER))
    try:
        with owner.begin() as connection:
            connection.exec_driver_sql("SET LOCAL enable_seqscan = off")
            for setting, value in (
                ("aizk.revision_check", "on"),
                ("aizk.revision_artifact_id", SAM_REVISION[0]),
                ("aizk.revision_artifact_content_id", SAM_REVISION[1]),
            ):
                connection.execute(
                    text("SELECT set_config(:setting, :value, true)"),
                    {"setting": setting, "value": value},
                )
            plan = connection.exec_driver_sql(
                f'EXPLAIN SELECT 1 FROM "public"."{table.table.name}"'
            ).all()
    finally:
        owner.dispose()
    assert f"{table.table.name}_aizk_revision" in "\n".join(row[0] for row in plan)
