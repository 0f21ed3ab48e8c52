"""The corpus in both frameworks' Postgres stores, made as an app deploys them: ingested by the
table's owner, set up once with `postgres_setup` (the reader policy, and the revision index and
function), then searched and read by the app's role, which the policy binds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_postgres import PGEngine, PGVector
from langchain_postgres import PGVectorStore as LangChainPGVectorStore
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.vector_stores.postgres import PGVectorStore
from sqlalchemy import Engine, NullPool, create_engine
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from aizk_integrations.langchain import AizkEvidenceCompressor, postgres_setup
from aizk_integrations.langchain import AizkScopedRetriever as LangChainScopedRetriever
from aizk_integrations.llama_index import AizkEvidencePostprocessor
from aizk_integrations.llama_index import postgres_setup as llama_index_postgres_setup
from tests.adapters.postgres_stores import app_database, owner_pgvectorstore
from tests.mcp.stores import (
    LANGCHAIN_DIMENSIONS,
    LLAMA_INDEX_DIMENSIONS,
    Built,
    documents,
    nodes,
)
from tests.postgres import Server

POSTGRES = (
    "langchain-pgvector",
    "langchain-pgvector-async",
    "langchain-pgvectorstore",
    "llama-index-pgvectorstore",
)
APP = "aizk_mcp_app"
COLLECTION = "mcp"


@contextmanager
def postgres_built(kind: str, server: Server) -> Iterator[Built]:
    """The corpus in a store of `kind` on a database of its own, as the app's role sees it."""
    with ExitStack() as stack:
        database = stack.enter_context(app_database(server, f"aizk_{kind.replace('-', '_')}", APP))
        owner = create_engine(database.url())
        stack.callback(owner.dispose)
        if kind == "langchain-pgvectorstore":
            yield _langchain_pgvectorstore(database, owner, stack)
        elif kind.startswith("langchain-pgvector"):
            yield _pgvector(database, owner, stack, asynchronous=kind.endswith("async"))
        else:
            yield _pgvectorstore(database, owner, stack)


def _pgvector(database: Server, owner: Engine, stack: ExitStack, *, asynchronous: bool) -> Built:
    embedding = DeterministicFakeEmbedding(size=LANGCHAIN_DIMENSIONS)
    store = PGVector(
        embeddings=embedding,
        connection=owner,
        collection_name=COLLECTION,
        embedding_length=LANGCHAIN_DIMENSIONS,
    )
    corpus = documents()
    store.add_documents(corpus, ids=[document.id or "" for document in corpus])
    _run(owner, postgres_setup(store, role=APP))
    as_app = PGVector(
        embeddings=embedding,
        connection=_async_engine(database) if asynchronous else _engine(database, stack),
        collection_name=COLLECTION,
    )
    retriever = LangChainScopedRetriever(vectorstore=as_app)
    kind = "langchain-pgvector-async" if asynchronous else "langchain-pgvector"
    return Built(kind, retriever, AizkEvidenceCompressor())


def _langchain_pgvectorstore(database: Server, owner: Engine, stack: ExitStack) -> Built:
    """langchain-postgres's `PGVectorStore` in its default layout (scopes and revision ids in
    its JSON metadata column), each side on a `PGEngine` of its own."""
    embedding = DeterministicFakeEmbedding(size=LANGCHAIN_DIMENSIONS)
    ingesting = PGEngine.from_connection_string(database.url("asyncpg"))
    stack.callback(lambda: asyncio.run(ingesting.close()))
    ingesting.init_vectorstore_table(COLLECTION, LANGCHAIN_DIMENSIONS)
    store = LangChainPGVectorStore.create_sync(ingesting, embedding, COLLECTION)
    store.add_documents(documents())
    _run(owner, postgres_setup(store, role=APP))
    app = PGEngine.from_connection_string(database.url("asyncpg", user=APP))
    stack.callback(lambda: asyncio.run(app.close()))
    as_app = LangChainPGVectorStore.create_sync(app, embedding, COLLECTION)
    retriever = LangChainScopedRetriever(vectorstore=as_app)
    return Built("langchain-pgvectorstore", retriever, AizkEvidenceCompressor())


def _engine(database: Server, stack: ExitStack) -> Engine:
    app = create_engine(database.url(user=APP))
    stack.callback(app.dispose)
    return app


def _async_engine(database: Server) -> AsyncEngine:
    """An async engine of the app's role that pools no connection: each test runs its server on
    an event loop of its own, and an async connection belongs to the loop that opened it."""
    return create_async_engine(database.url(user=APP), poolclass=NullPool)


def _pgvectorstore(database: Server, owner: Engine, stack: ExitStack) -> Built:
    embed_model = MockEmbedding(embed_dim=LLAMA_INDEX_DIMENSIONS)
    store = owner_pgvectorstore(database, COLLECTION, embed_dim=LLAMA_INDEX_DIMENSIONS)
    VectorStoreIndex(
        nodes(),
        storage_context=StorageContext.from_defaults(vector_store=store),
        embed_model=embed_model,
    )
    asyncio.run(store.close())
    _run(owner, llama_index_postgres_setup(store, role=APP))
    as_app = PGVectorStore(
        connection_string=database.url("psycopg2", user=APP),
        async_connection_string=database.url("asyncpg", user=APP),
        table_name=COLLECTION,
        embed_dim=LLAMA_INDEX_DIMENSIONS,
        initialization_fail_on_error=True,
    )
    stack.callback(lambda: asyncio.run(as_app.close()))
    index = VectorStoreIndex.from_vector_store(as_app, embed_model=embed_model)
    return Built("llama-index-pgvectorstore", index, AizkEvidencePostprocessor())


def _run(engine: Engine, statements: list[str]) -> None:
    with engine.begin() as connection:
        for statement in statements:
            connection.exec_driver_sql(statement)
