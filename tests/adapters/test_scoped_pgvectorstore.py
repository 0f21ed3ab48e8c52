"""Scoped retrieval over langchain-postgres's `PGVectorStore` (the store its README recommends),
sync and async, on a real server: each reader gets exactly the best of their own rows in one
query for most requests, the app's role is bound by the reader policy, and a layout the
retriever cannot read is refused when it is built.

The 1,000 notes of the 20 readers of `tests/scoped_corpus.py` are held twice, once in each
layout scoped retrieval reads: the scopes in the store's JSON metadata column
(`langchain_metadata`, json, its default), and in a `scopes` metadata column of type text[] (the
store writes a list into no other column type). Each table is set up by `postgres_setup` as its
owner (without the HNSW index, so every search ranks exactly) and searched by the app's role
through a `PGEngine` of its own. The oracle: the superuser's plain search of the same table
held to the reader's notes by their text, nearest first by the same distance.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import RunnableConfig
from langchain_postgres import Column, ColumnDict, PGEngine, PGVectorStore
from sqlalchemy import create_engine, text
from sqlalchemy.ext.asyncio import create_async_engine

from aizk_integrations.langchain import (
    AizkEvidenceCompressor,
    AizkEvidenceRetriever,
    AizkScopedRetriever,
    postgres_setup,
)
from tests.adapters.postgres_stores import app_database, document_id, scoped_queries
from tests.adapters.stores import WordEmbeddings
from tests.adapters.word_embedding import word_vector
from tests.postgres import Server
from tests.scoped_corpus import DIMENSIONS, READERS, directory_of, notes, questions, readable_by

NOTES = notes()
APP = "aizk_pgvectorstore_app"
QUESTIONS = questions(2)
LAYOUTS = {
    "json metadata": None,
    "text[] column": "text[]",
}
"""Each table's name (spaces as `_`) and the type of its `scopes` column (None: the scopes are
in the JSON metadata column)."""
PATHS = ["sync", "async"]


def table_of(layout: str) -> str:
    return layout.replace(" ", "_").replace("[]", "s")


def _columns(layout: str) -> list[str] | None:
    return None if LAYOUTS[layout] is None else ["scopes"]


@pytest.fixture(scope="module")
def database(postgres_server: Server) -> Iterator[Server]:
    with app_database(postgres_server, "aizk_scoped_pgvs", APP) as database:
        owner = PGEngine.from_connection_string(database.url("asyncpg"))
        superuser = create_engine(database.url())
        try:
            for layout, column_type in LAYOUTS.items():
                columns: list[Column | ColumnDict] = (
                    [] if column_type is None else [Column("scopes", column_type)]
                )
                owner.init_vectorstore_table(table_of(layout), DIMENSIONS, metadata_columns=columns)
                store = PGVectorStore.create_sync(
                    owner, WordEmbeddings(), table_of(layout), metadata_columns=_columns(layout)
                )
                store.add_documents(
                    [Document(n.text, id=document_id(n), metadata=n.metadata) for n in NOTES]
                )
                statements = postgres_setup(store, role=APP)
                with superuser.begin() as connection:
                    for statement in statements:
                        if "USING hnsw" not in statement:  # every search ranks exactly
                            connection.exec_driver_sql(statement)
                    connection.exec_driver_sql(f"ANALYZE {table_of(layout)}")
            yield database
        finally:
            superuser.dispose()
            asyncio.run(owner.close())


@cache
def best_of_own(database: Server, layout: str, reader: str, question: str) -> tuple[str, ...]:
    """The best four of the reader's own notes, as the table ranks them for the superuser."""
    engine = create_engine(database.url())
    theirs = [note.text for note in readable_by(reader, NOTES)]
    query = (
        f"SELECT content FROM {table_of(layout)} WHERE content = ANY(:theirs)"
        " ORDER BY embedding <=> CAST(:question AS vector) LIMIT 4"
    )
    try:
        with engine.connect() as connection:
            parameters = {"theirs": theirs, "question": str(word_vector(question))}
            return tuple(connection.execute(text(query), parameters).scalars())
    finally:
        engine.dispose()


def as_reader(reader: str) -> RunnableConfig:
    return {"configurable": {"aizk_reader": directory_of(reader)}}


Ask = tuple[str | None, str]
"""A request: its reader (None: the store's own search, naming no reader) and question."""


def answers(
    database: Server,
    layout: str,
    path: str,
    asks: list[Ask],
    *,
    packed: bool = False,
    concurrent: bool = False,
    role: str = APP,
    **pool: Any,
) -> list[list[str] | str]:
    """What each request of `asks` is answered on `path`, by one retriever over the layout's
    table as `role` (in turn, or all at once once the first has answered), through a `PGEngine`
    made with `pool` settings."""
    engine = PGEngine.from_connection_string(database.url("asyncpg", user=role), **pool)
    store = PGVectorStore.create_sync(
        engine, WordEmbeddings(), table_of(layout), metadata_columns=_columns(layout)
    )
    scoped = AizkScopedRetriever(vectorstore=store, search_kwargs={"k": 4})
    retriever = (
        AizkEvidenceRetriever(base_retriever=scoped, compressor=AizkEvidenceCompressor(budget=120))
        if packed
        else scoped
    )

    def shown(found: list[Document]) -> list[str] | str:
        return found[0].page_content if packed else [each.page_content for each in found]

    def answer(ask: Ask) -> list[str] | str:
        reader, question = ask
        if reader is None:
            return [each.page_content for each in store.similarity_search(question, k=4)]
        return shown(retriever.invoke(question, config=as_reader(reader)))

    async def aanswer(ask: Ask) -> list[str] | str:
        reader, question = ask
        if reader is None:
            return [each.page_content for each in await store.asimilarity_search(question, k=4)]
        return shown(await retriever.ainvoke(question, config=as_reader(reader)))

    async def all_async() -> list[list[str] | str]:
        if concurrent:
            await aanswer(asks[0])
            return list(await asyncio.gather(*(aanswer(ask) for ask in asks)))
        return [await aanswer(ask) for ask in asks]

    try:
        if path == "async":
            return asyncio.run(all_async())
        if concurrent:
            answer(asks[0])
            with ThreadPoolExecutor(max_workers=20) as workers:
                return list(workers.map(answer, asks))
        return [answer(ask) for ask in asks]
    finally:
        asyncio.run(engine.close())


ASKS: list[Ask] = [(reader, QUESTIONS[n % 2]) for n, reader in enumerate(READERS)]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_each_reader_gets_the_best_four_of_their_own_rows_in_each_layout(
    database: Server, layout: str, path: str
) -> None:
    got = answers(database, layout, path, ASKS)
    assert got == [list(best_of_own(database, layout, str(r), q)) for r, q in ASKS]


@pytest.mark.parametrize("path", PATHS)
def test_the_stores_own_search_as_the_apps_role_names_no_reader_and_sees_nothing(
    database: Server, path: str
) -> None:
    asks: list[Ask] = [(None, question) for question in QUESTIONS]
    assert answers(database, "json metadata", path, asks) == [[], []]
    superuser = answers(database, "json metadata", path, asks, role="postgres")
    assert all(len(found) == 4 for found in superuser)  # the same search, under no policy


@pytest.fixture
def filter_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The retriever's query without the readable-row condition: only the policy is left."""
    from aizk_integrations._stores.postgres import search

    def no_filter(table: object, key: str, *, policy: bool) -> str:
        return "(true)"

    monkeypatch.setattr(search, "reader_condition", no_filter)


@pytest.mark.usefixtures("filter_removed")
@pytest.mark.parametrize("path", PATHS)
def test_on_a_pool_of_4_connections_200_concurrent_requests_each_see_only_their_readers_rows(
    database: Server, path: str
) -> None:
    asks: list[Ask] = [
        (None if n % 10 == 9 else READERS[n % 20], QUESTIONS[n % 2]) for n in range(200)
    ]
    layout = "json metadata"
    got = answers(database, layout, path, asks, concurrent=True, pool_size=4, max_overflow=0)
    want = [[] if r is None else list(best_of_own(database, layout, r, q)) for r, q in asks]
    assert got == want


@pytest.mark.parametrize("path", PATHS)
def test_once_a_retriever_has_learnt_what_notes_cost_most_requests_are_one_query(
    database: Server, path: str
) -> None:
    asks: list[Ask] = [(READERS[0], QUESTIONS[1]), *((r, QUESTIONS[0]) for r in READERS)]
    with scoped_queries() as returned:
        blocks = answers(database, "json metadata", path, asks, packed=True)
    kept = sum(len(re.findall(r"note\d{4}", str(block))) for block in blocks)
    assert kept > 4 * len(asks)  # the walk read past a first page
    assert len(returned) / len(asks) <= 1.3
    assert sum(returned) <= 1.5 * (kept + len(asks))


def test_a_store_with_no_scopes_to_read_is_refused_when_the_retriever_is_built(
    database: Server,
) -> None:
    engine = PGEngine.from_connection_string(database.url("asyncpg"))
    try:
        engine.init_vectorstore_table("bare", DIMENSIONS, store_metadata=False)
        store = PGVectorStore.create_sync(engine, WordEmbeddings(), "bare")
        with pytest.raises(ValueError, match="has neither") as refused:
            AizkScopedRetriever(vectorstore=store)
        assert "metadata_columns=['scopes', ...]" in str(refused.value)
        with pytest.raises(ValueError, match="has neither"):
            postgres_setup(store, role=APP)
    finally:
        asyncio.run(engine.close())


@pytest.mark.parametrize("path", PATHS)
def test_scoped_retrieval_over_a_table_never_set_up_says_to_run_postgres_setup(
    database: Server, path: str
) -> None:
    owner = PGEngine.from_connection_string(database.url("asyncpg"))
    try:
        table = f"unset_{path}"
        owner.init_vectorstore_table(table, DIMENSIONS)
        store = PGVectorStore.create_sync(owner, WordEmbeddings(), table)
        store.add_documents([Document(NOTES[0].text, metadata=NOTES[0].metadata)])
        retriever = AizkScopedRetriever(vectorstore=store)
        config = as_reader(READERS[0])

        def ask() -> list[Document]:
            if path == "async":
                return asyncio.run(retriever.ainvoke(QUESTIONS[0], config=config))
            return retriever.invoke(QUESTIONS[0], config=config)

        with pytest.raises(RuntimeError, match="was never set up") as refused:
            ask()
        assert "run the SQL postgres_setup(store, role=...) returns" in str(refused.value)
    finally:
        asyncio.run(owner.close())


def test_an_async_pgvectorstore_answers_ainvoke_exactly_and_refuses_invoke_with_the_fix(
    database: Server,
) -> None:
    from langchain_postgres.v2.async_vectorstore import AsyncPGVectorStore

    layout = "json metadata"

    async def run() -> list[list[str]]:
        engine = PGEngine.from_engine(create_async_engine(database.url("asyncpg", user=APP)))
        try:
            store = await AsyncPGVectorStore.create(engine, WordEmbeddings(), table_of(layout))
            retriever = AizkScopedRetriever(vectorstore=store, search_kwargs={"k": 4})
            with pytest.raises(ValueError, match="serves only async calls") as refused:
                retriever.invoke(QUESTIONS[0], config=as_reader(READERS[0]))
            assert "use langchain-postgres's PGVectorStore" in str(refused.value)
            return [
                [each.page_content for each in await retriever.ainvoke(q, config=as_reader(r))]
                for r, q in ASKS
                if r is not None
            ]
        finally:
            await engine.close()

    got = asyncio.run(run())
    assert got == [list(best_of_own(database, layout, str(r), q)) for r, q in ASKS]
