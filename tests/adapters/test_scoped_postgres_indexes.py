"""Scoped retrieval over an HNSW index: pgvector's iterative scan, which the retrievers turn on in
each query's transaction, keeps an approximate search from coming back short for a rare reader.

The tables (PGVector's and a PGVectorStore's) hold 3,000 notes of the 20 readers and 3 of a rare
reader, and are set up by `postgres_setup` as a migration would. The app's role here has bitmap
and sequential scans turned off, so that every search goes through the HNSW index, as on a
table too large to scan: an HNSW scan finds `hnsw.ef_search` (40) candidates, of which the
policy keeps the reader's, which for the rare reader are none or one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from langchain_core.runnables import RunnableConfig
from langchain_postgres import PGVector
from llama_index.core import VectorStoreIndex
from sqlalchemy import create_engine, text

from aizk_integrations import ScopeDirectory
from aizk_integrations.langchain import AizkScopedRetriever, postgres_setup
from aizk_integrations.llama_index import AizkScopedRetriever as LlamaIndexScoped
from aizk_integrations.llama_index import postgres_setup as llama_index_postgres_setup
from tests.adapters.postgres_stores import (
    app_async_pgvector,
    app_database,
    app_pgvector,
    app_pgvectorstore,
    as_documents,
    as_nodes,
    ingest_pgvector,
    ingest_pgvectorstore,
    owner_pgvectorstore,
)
from tests.adapters.stores import WordEmbeddings
from tests.adapters.word_embedding import WordEmbedding
from tests.postgres import Server
from tests.scoped_corpus import READERS, Note, directory_of, notes

APP = "aizk_hnsw_app"
RARE = [
    Note(id=f"rare-{number}", text=f"{words} rare{number}", scopes=("rare-reader",))
    for number, words in enumerate(["garden budget", "piano harbor", "kettle lecture"])
]
STORED = [*notes(3000, seed=3), *RARE]
RARE_READER = ScopeDirectory.for_caller("rare-reader", {})
QUESTION = "chess sprint"
"""Far from every rare note: their rows rank low in the whole table."""
PATHS = ["langchain", "langchain async", "llama-index", "llama-index async"]


@pytest.fixture(scope="module")
def database(postgres_server: Server) -> Iterator[Server]:
    with app_database(postgres_server, "aizk_hnsw", APP) as database:
        ingest_pgvector(database, {"shared": as_documents(STORED, "shared")})
        ingest_pgvectorstore(database, {"shared": as_nodes(STORED)})
        engine = create_engine(database.url())
        pgvector = PGVector(
            embeddings=WordEmbeddings(), connection=engine, collection_name="shared"
        )
        vector_store = owner_pgvectorstore(database, "shared")
        try:
            with engine.begin() as connection:
                statements = postgres_setup(pgvector, role=APP)
                statements += llama_index_postgres_setup(vector_store, role=APP)
                for statement in statements:
                    connection.exec_driver_sql(statement)
                for setting in ("enable_bitmapscan", "enable_seqscan"):
                    connection.exec_driver_sql(
                        f'ALTER ROLE "{APP}" IN DATABASE "{database.dbname}" SET {setting} = off'
                    )
                connection.exec_driver_sql("ANALYZE")
        finally:
            engine.dispose()
            asyncio.run(vector_store.close())
        yield database


def best(database: Server, path: str, reader: ScopeDirectory, k: int) -> list[str]:
    """The reader's best `k` on `path`, as the app's role."""
    config: RunnableConfig = {"configurable": {"aizk_reader": reader}}
    if path == "langchain":
        with app_pgvector(database, APP, "shared") as store:
            found = AizkScopedRetriever(vectorstore=store, search_kwargs={"k": k}).invoke(
                QUESTION, config
            )
            return [document.page_content for document in found]
    if path == "llama-index":
        vector_store = app_pgvectorstore(database, APP, "shared")
        try:
            index = VectorStoreIndex.from_vector_store(vector_store, embed_model=WordEmbedding())
            scoped = LlamaIndexScoped(index, similarity_top_k=k).for_reader(reader)
            return [scored.node.get_content() for scored in scoped.retrieve(QUESTION)]
        finally:
            asyncio.run(vector_store.close())

    async def run() -> list[str]:
        if path == "langchain async":
            async with app_async_pgvector(database, APP, "shared") as store:
                retriever = AizkScopedRetriever(vectorstore=store, search_kwargs={"k": k})
                found = await retriever.ainvoke(QUESTION, config)
                return [document.page_content for document in found]
        vector_store = app_pgvectorstore(database, APP, "shared")
        try:
            index = VectorStoreIndex.from_vector_store(vector_store, embed_model=WordEmbedding())
            scoped = LlamaIndexScoped(index, similarity_top_k=k).for_reader(reader)
            return [scored.node.get_content() for scored in await scoped.aretrieve(QUESTION)]
        finally:
            await vector_store.close()

    return asyncio.run(run())


def test_the_apps_searches_go_through_the_hnsw_index(database: Server) -> None:
    engine = create_engine(database.url(user=APP))
    query = "EXPLAIN SELECT id FROM data_shared ORDER BY embedding <=> CAST(:v AS vector) LIMIT 4"
    try:
        with engine.connect() as connection:
            vector = str([0.1] * 32)
            plan = list(connection.execute(text(query), {"v": vector}).scalars())
    finally:
        engine.dispose()
    assert any("Index Scan using data_shared_aizk_embedding" in line for line in plan), plan


@pytest.mark.parametrize("path", PATHS)
def test_a_rare_reader_gets_all_their_rows_through_the_hnsw_index(
    database: Server, path: str
) -> None:
    assert sorted(best(database, path, RARE_READER, 4)) == sorted(note.text for note in RARE)
    assert len(best(database, path, directory_of(READERS[2]), 4)) == 4


@pytest.mark.parametrize("path", PATHS)
def test_without_the_iterative_scan_the_rare_reader_comes_back_short(
    database: Server, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import aizk_integrations.langchain._postgres as langchain_postgres
    import aizk_integrations.llama_index._postgres as llama_index_postgres

    reader_ids_only = (
        "SELECT set_config('aizk.reader_ids', :reader_ids, true),"
        " row_security_active(CAST(:table AS regclass))"
    )
    for module in (langchain_postgres, llama_index_postgres):
        monkeypatch.setattr(module, "START_READING", reader_ids_only)
    assert len(best(database, path, RARE_READER, 4)) < len(RARE)
