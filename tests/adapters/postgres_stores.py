"""Both frameworks' Postgres stores on a test database, made as an app deploys them.

Ingestion runs as the cluster's superuser, who owns the tables; a migration then indexes them,
puts them under the reader policy and lets the app's role read them; the retrievers run as the
app's role (LOGIN, no BYPASSRLS, SELECT only), so every query they make is bound by the policy.
The stores are langchain-postgres's `PGVector` (psycopg 3, sync or async) and LlamaIndex's
`PGVectorStore` (psycopg2 for its sync engine, asyncpg for its async one, as `from_params`
makes them; scoped retrieval queries on an engine of its own, from the psycopg2 one's URL).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from langchain_core.documents import Document
from langchain_core.runnables import RunnableConfig
from langchain_postgres import PGVector
from llama_index.core import VectorStoreIndex
from llama_index.core.schema import TextNode
from llama_index.vector_stores.postgres import PGVectorStore
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.ext.asyncio import create_async_engine

from aizk_integrations import ScopeDirectory
from aizk_integrations._stores.postgres.names import PGVECTOR_TABLE, StoreTable, llama_index_table
from aizk_integrations._stores.postgres.setup import embedding_index, setup
from aizk_integrations.langchain import (
    AizkEvidenceCompressor,
    AizkEvidenceRetriever,
    AizkScopedRetriever,
)
from aizk_integrations.llama_index import AizkEvidencePostprocessor
from aizk_integrations.llama_index import AizkScopedRetriever as LlamaIndexScoped
from tests.adapters.stores import MOST, Item, Store, WordEmbeddings, _added, _node, _texts
from tests.adapters.word_embedding import WordEmbedding, word_vector
from tests.postgres import Server, fresh_database
from tests.scoped_corpus import DIMENSIONS, Note


@contextmanager
def app_database(server: Server, name: str, role: str) -> Iterator[Server]:
    """A fresh database `name`, and the app's `role` in the cluster: both dropped afterwards."""
    with fresh_database(server, name) as database:
        _run(database, f'CREATE ROLE "{role}" LOGIN NOBYPASSRLS')
        try:
            yield database
        finally:
            _run(database, f'DROP OWNED BY "{role}"')
            _run(server, f'DROP ROLE "{role}"')


def _run(server: Server, *statements: str) -> None:
    engine = create_engine(server.url())
    try:
        with engine.begin() as connection:
            for statement in statements:
                connection.exec_driver_sql(statement)
    finally:
        engine.dispose()


def document_id(note: Note, collection: str = "") -> str:
    """A note's id in a collection: PGVector keys every collection's rows by id in one table."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{collection}/{note.id}"))


def as_documents(stored: Sequence[Note], collection: str = "") -> list[Document]:
    return [
        Document(note.text, id=document_id(note, collection), metadata=note.metadata)
        for note in stored
    ]


def as_nodes(stored: Sequence[Note]) -> list[TextNode]:
    return [
        TextNode(
            id_=document_id(note),
            text=note.text,
            metadata=note.metadata,
            excluded_embed_metadata_keys=["scopes"],
            excluded_llm_metadata_keys=["scopes"],
            embedding=word_vector(note.text),
        )
        for note in stored
    ]


def ingest_pgvector(database: Server, collections: dict[str, list[Document]]) -> None:
    """Each collection's documents in PGVector's table, added by its owner."""
    engine = create_engine(database.url())
    try:
        for name, documents in collections.items():
            store = PGVector(
                embeddings=WordEmbeddings(),
                connection=engine,
                collection_name=name,
                embedding_length=DIMENSIONS,
            )
            store.add_documents(documents, ids=[document.id or "" for document in documents])
    finally:
        engine.dispose()


def ingest_pgvectorstore(database: Server, tables: dict[str, list[TextNode]]) -> None:
    """Each table's nodes in a `PGVectorStore` table of its own, added by its owner."""
    for name, nodes in tables.items():
        store = owner_pgvectorstore(database, name)
        store.add(list(nodes))
        asyncio.run(store.close())


def owner_pgvectorstore(
    database: Server, table_name: str, *, embed_dim: int = DIMENSIONS, use_jsonb: bool = False
) -> PGVectorStore:
    """LlamaIndex's `PGVectorStore` on `table_name`, connected as the server's owner."""
    return PGVectorStore.from_params(
        host=database.host,
        port=str(database.port),
        database=database.dbname,
        user=database.user,
        password="",
        table_name=table_name,
        embed_dim=embed_dim,
        use_jsonb=use_jsonb,
    )


def secure(database: Server, table: StoreTable, role: str, *, hnsw: bool) -> None:
    """The migration `postgres_setup` writes, on `table`, as its owner; without the HNSW index
    when `hnsw` is false, so that every search ranks exactly (as on a small table)."""
    statements = setup(table, "scopes", role)
    if not hnsw:
        statements.remove(embedding_index(table))
    _run(database, *statements, f'ANALYZE "{table.schema}"."{table.name}"')


@contextmanager
def app_pgvector(database: Server, role: str, collection: str, **pool: Any) -> Iterator[PGVector]:
    """A sync `PGVector` on `role`, its engine made with `pool` settings, disposed afterwards."""
    engine = create_engine(database.url(user=role), **pool)
    try:
        yield PGVector(embeddings=WordEmbeddings(), connection=engine, collection_name=collection)
    finally:
        engine.dispose()


@asynccontextmanager
async def app_async_pgvector(
    database: Server, role: str, collection: str, **pool: Any
) -> AsyncIterator[PGVector]:
    """An async `PGVector` on `role`, in the event loop that uses it."""
    engine = create_async_engine(database.url(user=role), **pool)
    try:
        yield PGVector(embeddings=WordEmbeddings(), connection=engine, collection_name=collection)
    finally:
        await engine.dispose()


def app_pgvectorstore(database: Server, role: str, table_name: str, **engine: Any) -> PGVectorStore:
    """A `PGVectorStore` on the app's role, its engines (and scoped retrieval's) made with
    `engine` (pool settings); its async engine belongs to the loop that first uses it."""
    return PGVectorStore(
        connection_string=database.url("psycopg2", user=role),
        async_connection_string=database.url("asyncpg", user=role),
        create_engine_kwargs=engine,
        table_name=table_name,
        embed_dim=DIMENSIONS,
        initialization_fail_on_error=True,  # its setup, as the app's role, must not fail
    )


class PostgresStore(Store):
    """One of the two Postgres stores, as `tests/adapters/stores.py`'s interface asks it: held
    in the database's PGVector table (collection `name`) or a PGVectorStore table (`name`),
    ingested by its owner, searched by scoped retrieval as the app's `role` (under the policy,
    once the table is secured) and by the packer's oracle as the superuser (bound by none)."""

    def __init__(
        self, kind: str, database: Server, role: str, name: str, items: Sequence[Item],
        odd: Sequence[Item],
    ) -> None:  # fmt: skip
        self.kind, self._database, self._role, self._name = kind, database, role, name
        if kind == "langchain-pgvector":
            engine = create_engine(database.url())
            store = PGVector(
                embeddings=WordEmbeddings(),
                connection=engine,
                collection_name=name,
                embedding_length=DIMENSIONS,
            )
            self.held, self.refused = _added(
                items,
                odd,
                lambda some: store.add_documents(
                    [Document(item.text, metadata=item.metadata) for item in some],
                    ids=[f"{name}/{item.id}" for item in some],
                ),
            )
            engine.dispose()
        else:
            owner = owner_pgvectorstore(database, name)
            self.held, self.refused = _added(
                items, odd, lambda some: owner.add([_node(item) for item in some])
            )
            asyncio.run(owner.close())

    @property
    def table(self) -> StoreTable:
        if self.kind == "langchain-pgvector":
            return PGVECTOR_TABLE
        return llama_index_table(self._name)

    def scoped(self, reader: ScopeDirectory, query: str, k: int) -> list[str]:
        if self.kind == "langchain-pgvector":
            with app_pgvector(self._database, self._role, self._name) as store:
                found = AizkScopedRetriever(vectorstore=store, search_kwargs={"k": k}).invoke(
                    query, _config(reader)
                )
                return [document.page_content for document in found]
        with self._index(self._role) as index:
            retriever = LlamaIndexScoped(index, similarity_top_k=k, max_fetch=max(k, 1024))
            return _texts(retriever.for_reader(reader).retrieve(query))

    def ascoped(self, reader: ScopeDirectory, query: str, k: int) -> list[str]:
        async def run() -> list[str]:
            if self.kind == "langchain-pgvector":
                async with app_async_pgvector(self._database, self._role, self._name) as store:
                    retriever = AizkScopedRetriever(vectorstore=store, search_kwargs={"k": k})
                    found = await retriever.ainvoke(query, _config(reader))
                    return [document.page_content for document in found]
            vector_store = app_pgvectorstore(self._database, self._role, self._name)
            index = VectorStoreIndex.from_vector_store(vector_store, embed_model=WordEmbedding())
            scoped = LlamaIndexScoped(index, similarity_top_k=k, max_fetch=max(k, 1024))
            try:
                return _texts(await scoped.for_reader(reader).aretrieve(query))
            finally:
                await vector_store.close()

        return asyncio.run(run())

    def packed(self, reader: ScopeDirectory, query: str, budget: int) -> list[str]:
        if self.kind == "langchain-pgvector":
            with app_pgvector(self._database, self._role, self._name) as store:
                retriever = AizkEvidenceRetriever(
                    base_retriever=AizkScopedRetriever(vectorstore=store),
                    compressor=AizkEvidenceCompressor(budget=budget, return_documents=True),
                )
                kept = retriever.invoke(query, config=_config(reader))
                return [document.page_content for document in kept]
        with self._index(self._role) as index:
            evidence = AizkEvidencePostprocessor(budget=budget, return_nodes=True)
            scoped = LlamaIndexScoped(index, evidence=evidence)
            return _texts(scoped.for_reader(reader).retrieve(query))

    def shown(self, reader: ScopeDirectory, query: str) -> list[str]:
        count = max(1, len(self.held))
        if self.kind == "langchain-pgvector":
            engine = create_engine(self._database.url())
            try:
                store = PGVector(
                    embeddings=WordEmbeddings(), connection=engine, collection_name=self._name
                )
                every = store.similarity_search(query, k=count)
            finally:
                engine.dispose()
            packer = AizkEvidenceCompressor(
                reader=reader, budget=MOST, max_budget=MOST, return_documents=True
            )
            return [document.page_content for document in packer.compress_documents(every, query)]
        with self._index(None) as index:
            nodes = index.as_retriever(similarity_top_k=count).retrieve(query)
        postprocessor = AizkEvidencePostprocessor(
            reader=reader, budget=MOST, max_budget=MOST, return_nodes=True
        )
        return _texts(postprocessor.postprocess_nodes(nodes, query_str=query))

    @contextmanager
    def _index(self, role: str | None) -> Iterator[VectorStoreIndex]:
        """The table as an index: as the app's `role`, or as the superuser (None)."""
        vector_store = (
            owner_pgvectorstore(self._database, self._name)
            if role is None
            else app_pgvectorstore(self._database, role, self._name)
        )
        try:
            yield VectorStoreIndex.from_vector_store(vector_store, embed_model=WordEmbedding())
        finally:
            asyncio.run(vector_store.close())


def _config(reader: ScopeDirectory) -> RunnableConfig:
    return {"configurable": {"aizk_reader": reader}}


SCOPED = '"aizk_scopes"'
"""What every scoped query reads, and no other statement names: the row's scope ids column."""


@contextmanager
def scoped_queries(statements: list[str] | None = None) -> Iterator[list[int]]:
    """The rows each scoped query returned, on any engine (an async one's sync core too), and
    each such statement's SQL in `statements` when given. A listener on SQLAlchemy's `Engine`
    for the length of the block: a test's or a bench's own probe, never the library's."""
    returned: list[int] = []

    def after(connection: Any, cursor: Any, statement: str, *args: Any) -> None:
        if SCOPED in statement:
            returned.append(cursor.rowcount)
            if statements is not None:
                statements.append(statement)

    event.listen(Engine, "after_cursor_execute", after)
    try:
        yield returned
    finally:
        event.remove(Engine, "after_cursor_execute", after)
