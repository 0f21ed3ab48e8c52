"""Scoped retrieval over Postgres + pgvector, through both frameworks, sync and async, on a real
server: each reader gets exactly what a table of only their rows gives, in one query for most
requests, and nothing of another reader's reaches a return value, event, log or trace.

One database holds the 1,000 notes of the 20 readers of `tests/scoped_corpus.py` twice over:
in PGVector's table (collection `shared`) and in a `PGVectorStore` table (`data_shared`), each
under the reader policy, searched by the app's role. Beside them, each reader's readable notes
alone (collection / table `own_user_NN`), searched plainly by the superuser: the oracle. The
tables have the scopes index but no HNSW index, so every search ranks exactly.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import re
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langchain_postgres import PGVector
from llama_index.core import VectorStoreIndex
from llama_index.core.callbacks import CallbackManager
from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
from llama_index.core.schema import NodeWithScore
from llama_index.vector_stores.postgres import PGVectorStore
from sqlalchemy import create_engine
from sqlalchemy.ext.asyncio import create_async_engine

from aizk_integrations import ScopeDirectory
from aizk_integrations._stores.postgres.names import PGVECTOR_TABLE, llama_index_table
from aizk_integrations.langchain import (
    AizkEvidenceCompressor,
    AizkEvidenceRetriever,
    AizkScopedRetriever,
    postgres_setup,
)
from aizk_integrations.langchain._stores import searcher
from aizk_integrations.llama_index import (
    AizkEvidencePostprocessor,
)
from aizk_integrations.llama_index import AizkScopedRetriever as LlamaIndexScoped
from aizk_integrations.llama_index import postgres_setup as llama_index_postgres_setup
from aizk_integrations.llama_index._stores import postgres_search
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
    scoped_queries,
    secure,
)
from tests.adapters.stores import WordEmbeddings
from tests.adapters.test_scoped_real_data import sized
from tests.adapters.tracing import EveryEvent, EveryPayload
from tests.adapters.word_embedding import WordEmbedding, word_vector
from tests.postgres import Server
from tests.scoped_corpus import DIMENSIONS, READERS, directory_of, notes, questions, readable_by

NOTES = notes()
APP = "aizk_scoped_app"
BUDGET = 120
"""About a dozen notes: more than a first page of four."""
QUESTIONS = questions(2)
PATHS = ["langchain", "langchain async", "llama-index", "llama-index async"]


def own(reader: str) -> str:
    """The collection (PGVector) and table (PGVectorStore) of `reader`'s readable notes alone."""
    return f"own_{reader.replace('-', '_')}"


@pytest.fixture(scope="module")
def database(postgres_server: Server) -> Iterator[Server]:
    with app_database(postgres_server, "aizk_scoped_pg", APP) as database:
        collections = {own(reader): readable_by(reader, NOTES) for reader in READERS}
        collections["shared"] = NOTES
        ingest_pgvector(
            database, {name: as_documents(stored, name) for name, stored in collections.items()}
        )
        secure(database, PGVECTOR_TABLE, APP, hnsw=False)
        ingest_pgvectorstore(
            database, {name: as_nodes(stored) for name, stored in collections.items()}
        )
        for name in collections:
            secure(database, llama_index_table(name), APP, hnsw=False)
        yield database


# -- the oracle: a plain search of a table holding only the reader's rows, as the superuser ----


def own_ranking(database: Server, framework: str, reader: str, question: str) -> list[str]:
    """Every note the reader may read, in the ranking a store of only those notes gives."""
    count = len(readable_by(reader, NOTES))
    if framework == "langchain":
        engine = create_engine(database.url())
        try:
            store = PGVector(
                embeddings=WordEmbeddings(), connection=engine, collection_name=own(reader)
            )
            return [document.page_content for document in store.similarity_search(question, count)]
        finally:
            engine.dispose()
    vector_store = owner_pgvectorstore(database, own(reader))
    try:
        index = VectorStoreIndex.from_vector_store(vector_store, embed_model=WordEmbedding())
        return texts(index.as_retriever(similarity_top_k=count).retrieve(question))
    finally:
        asyncio.run(vector_store.close())


def own_block(database: Server, framework: str, reader: str, question: str) -> str:
    """The block the packer makes of the reader's own table, in its ranking."""
    ranked = own_ranking(database, framework, reader, question)
    documents = [
        Document(note.text, metadata=note.metadata)
        for text in ranked
        for note in NOTES
        if note.text == text
    ]
    packer = AizkEvidenceCompressor(reader=directory_of(reader), budget=BUDGET)
    [block] = packer.compress_documents(documents, question)
    return block.page_content


def texts(found: list[NodeWithScore]) -> list[str]:
    return [scored.node.get_content() for scored in found]


# -- the retrievers, as the app's role, on each path ------------------------------------------

Reader = str | ScopeDirectory
"""One of the 20 readers, by name, or a directory of its own."""
Ask = tuple[Reader | None, str]
"""A request: its reader (None: a plain search of the store, naming no reader) and question."""


def directory(reader: Reader) -> ScopeDirectory:
    return directory_of(reader) if isinstance(reader, str) else reader


def as_reader(reader: Reader) -> RunnableConfig:
    return {"configurable": {"aizk_reader": directory(reader)}}


def langchain_retriever(store: PGVector, packed: bool) -> BaseRetriever:
    scoped = AizkScopedRetriever(vectorstore=store, search_kwargs={"k": 4})
    if not packed:
        return scoped
    return AizkEvidenceRetriever(
        base_retriever=scoped, compressor=AizkEvidenceCompressor(budget=BUDGET)
    )


def llama_index_retriever(vector_store: PGVectorStore, packed: bool) -> LlamaIndexScoped:
    index = VectorStoreIndex.from_vector_store(vector_store, embed_model=WordEmbedding())
    evidence = AizkEvidencePostprocessor(budget=BUDGET) if packed else None
    return LlamaIndexScoped(index, evidence=evidence)


def _langchain_answer(found: list[Document], packed: bool) -> Answer:
    return found[0].page_content if packed else [document.page_content for document in found]


def _llama_index_answer(found: list[NodeWithScore], packed: bool) -> Answer:
    return found[0].node.get_content() if packed else texts(found)


Answer = str | list[str]
"""The block (packed), or the texts of the best four."""


def answers(
    database: Server,
    path: str,
    asks: list[Ask],
    *,
    packed: bool = False,
    concurrent: bool = False,
    after_each: Callable[[], object] = lambda: None,
    role: str = APP,
    **pool: Any,
) -> list[Answer]:
    """What each request of `asks` is answered on `path`, by one retriever over the shared
    table as the app's `role`, its engines made with `pool` settings: in turn (`after_each` is
    called after each answer), or all at once (20 threads, or one task each) once the store has
    answered one request (a store sets itself up on its first)."""
    if path.endswith("async"):
        return asyncio.run(
            _aanswers(database, path, asks, packed, concurrent, after_each, role, pool)
        )

    def in_turn_or_at_once(answer: Callable[[Ask], Answer]) -> list[Answer]:
        if concurrent:
            answer(asks[0])
            with ThreadPoolExecutor(max_workers=20) as workers:
                return list(workers.map(answer, asks))
        found = []
        for ask in asks:
            found.append(answer(ask))
            after_each()
        return found

    if path == "langchain":
        with app_pgvector(database, role, "shared", **pool) as store:
            retriever = langchain_retriever(store, packed)

            def answer(ask: Ask) -> Answer:
                reader, question = ask
                if reader is None:
                    return [found.page_content for found in store.similarity_search(question)]
                found = retriever.invoke(question, config=as_reader(reader))
                return _langchain_answer(found, packed)

            return in_turn_or_at_once(answer)
    vector_store = app_pgvectorstore(database, role, "shared", **pool)
    shared = llama_index_retriever(vector_store, packed)

    def answer_node(ask: Ask) -> Answer:
        reader, question = ask
        if reader is None:
            plain = VectorStoreIndex.from_vector_store(vector_store, embed_model=WordEmbedding())
            return texts(plain.as_retriever(similarity_top_k=4).retrieve(question))
        found = shared.for_reader(directory(reader)).retrieve(question)
        return _llama_index_answer(found, packed)

    try:
        return in_turn_or_at_once(answer_node)
    finally:
        asyncio.run(vector_store.close())


async def _aanswers(
    database: Server,
    path: str,
    asks: list[Ask],
    packed: bool,
    concurrent: bool,
    after_each: Callable[[], object],
    role: str,
    pool: dict[str, Any],
) -> list[Answer]:
    async def in_turn_or_at_once(answer: Callable[[Ask], Awaitable[Answer]]) -> list[Answer]:
        if concurrent:
            await answer(asks[0])
            return list(await asyncio.gather(*(answer(ask) for ask in asks)))
        found = []
        for ask in asks:
            found.append(await answer(ask))
            after_each()
        return found

    if path == "langchain async":
        async with app_async_pgvector(database, role, "shared", **pool) as store:
            retriever = langchain_retriever(store, packed)

            async def answer(ask: Ask) -> Answer:
                reader, question = ask
                if reader is None:
                    found = await store.asimilarity_search(question)
                    return [document.page_content for document in found]
                found = await retriever.ainvoke(question, config=as_reader(reader))
                return _langchain_answer(found, packed)

            return await in_turn_or_at_once(answer)
    vector_store = app_pgvectorstore(database, role, "shared", **pool)
    shared = llama_index_retriever(vector_store, packed)

    async def answer_node(ask: Ask) -> Answer:
        reader, question = ask
        if reader is None:
            plain = VectorStoreIndex.from_vector_store(vector_store, embed_model=WordEmbedding())
            return texts(await plain.as_retriever(similarity_top_k=4).aretrieve(question))
        found = await shared.for_reader(directory(reader)).aretrieve(question)
        return _llama_index_answer(found, packed)

    try:
        return await in_turn_or_at_once(answer_node)
    finally:
        await vector_store.close()


def framework_of(path: str) -> str:
    return path.split()[0]


ASKS: list[Ask] = [(reader, question) for reader in READERS for question in QUESTIONS]


Oracle = Callable[[str, str, str], list[str]]
"""(framework, reader, question) -> the best four of the reader's own table."""


@pytest.fixture(scope="module")
def best_of_own(database: Server) -> Oracle:
    @cache
    def best(framework: str, reader: str, question: str) -> list[str]:
        return own_ranking(database, framework, reader, question)[:4]

    return best


@pytest.mark.parametrize("path", PATHS)
def test_each_reader_gets_the_best_four_a_table_of_only_their_rows_gives(
    database: Server, best_of_own: Oracle, path: str
) -> None:
    got = answers(database, path, ASKS)
    assert got == [best_of_own(framework_of(path), str(r), q) for r, q in ASKS]


@pytest.mark.parametrize("path", PATHS)
def test_each_readers_block_is_the_block_a_table_of_only_their_rows_gives(
    database: Server, path: str
) -> None:
    asks: list[Ask] = [(reader, QUESTIONS[number % 2]) for number, reader in enumerate(READERS)]
    blocks = answers(database, path, asks, packed=True)
    for (reader, question), block in zip(asks, blocks, strict=True):
        assert block == own_block(database, framework_of(path), str(reader), question)
        assert len(re.findall(r"note\d{4}", str(block))) > 4  # the walk read past a first page


# -- one query per request ---------------------------------------------------------------------


GUARDED = '"aizk_scopes"[1] IN (SELECT reader_id'
"""What a scoped query's SQL holds when it checks each row exactly (`WITHIN_READER`)."""
LOOKED_UP = "'{\"\"}'::text[]) &&"
"""What a scoped query's SQL holds when it looks the reader's rows up itself (`INDEX_LOOKUP`)."""


@pytest.mark.parametrize("path", PATHS)
def test_once_a_retriever_has_learnt_what_notes_cost_most_requests_are_one_query(
    database: Server, path: str
) -> None:
    warm: list[Ask] = [(READERS[0], QUESTIONS[1])]  # a retriever's first request learns the costs
    asks: list[Ask] = [(reader, QUESTIONS[0]) for reader in READERS]
    with scoped_queries() as returned:
        counted: list[int] = []
        blocks = answers(
            database,
            path,
            warm + asks,
            packed=True,
            after_each=lambda: counted.append(len(returned)),
        )
    per_request = [after - before for before, after in itertools.pairwise(counted)]
    assert min(per_request) >= 1
    fetched = sum(returned[counted[0] :])
    kept = sum(len(re.findall(r"note\d{4}", str(block))) for block in blocks[1:])
    assert sum(per_request) / len(asks) <= 1.3
    assert fetched <= 1.5 * (kept + len(asks))  # the kept prefix and the one past it, each


@pytest.mark.parametrize("path", PATHS)
def test_under_the_policy_the_query_of_any_reader_only_guards_with_the_exact_check(
    database: Server, best_of_own: Oracle, path: str
) -> None:
    large = sized(READERS[4], 1000)  # 1,000 scopes, half UUIDs, as a directory-synced reader
    want = best_of_own(framework_of(path), READERS[4], QUESTIONS[0])
    for reader in (READERS[4], large):
        statements: list[str] = []
        with scoped_queries(statements):
            assert answers(database, path, [(reader, QUESTIONS[0])]) == [want]
        assert statements
        assert all(GUARDED in statement for statement in statements)
        assert not any(LOOKED_UP in statement for statement in statements)


@pytest.mark.parametrize("path", PATHS)
def test_the_query_looks_the_readers_rows_up_itself_only_where_no_policy_binds(
    database: Server, best_of_own: Oracle, path: str
) -> None:
    asks: list[Ask] = [(READERS[4], QUESTIONS[0])]
    want = [best_of_own(framework_of(path), READERS[4], QUESTIONS[0])]
    for role, looks_up in ((APP, False), ("postgres", True)):  # bound; a superuser is not
        statements: list[str] = []
        with scoped_queries(statements):
            assert answers(database, path, asks, role=role) == want
        assert statements
        assert all((LOOKED_UP in statement) is looks_up for statement in statements)


# -- row-level security: the database is the last line ---------------------------------------

NO_FILTER = "(true)"
"""A readable-row condition that lets every row through: the retriever's filter, removed."""


@pytest.fixture
def filter_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both retrievers' queries without the readable-row condition: only the policy is left."""
    from aizk_integrations._stores.postgres import search

    def no_filter(table: object, key: str, *, policy: bool) -> str:
        return NO_FILTER

    monkeypatch.setattr(search, "reader_condition", no_filter)


def _raw(database: Server, path: str, role: str, reader: str, top: int) -> list[list[str]]:
    """The scopes of what the store itself returns for `reader`'s query (before any check)."""
    ids = frozenset(directory_of(reader).scopes)
    if framework_of(path) == "langchain":
        with app_pgvector(database, role, "shared") as store:
            found = searcher(store, "scopes", None).search(QUESTIONS[0], top, ids)
            return [document.metadata["scopes"] for document in found]
    vector_store = app_pgvectorstore(database, role, "shared")
    postgres = postgres_search(vector_store, "scopes")
    assert postgres is not None
    nodes = postgres.search(word_vector(QUESTIONS[0]), top, ids)
    return [scored.node.metadata["scopes"] for scored in nodes]


@pytest.mark.usefixtures("filter_removed")
@pytest.mark.parametrize("path", PATHS)
def test_with_the_retrievers_filter_removed_the_policy_still_returns_only_the_readers_rows(
    database: Server, best_of_own: Oracle, path: str
) -> None:
    got = answers(database, path, ASKS)
    assert got == [best_of_own(framework_of(path), str(r), q) for r, q in ASKS]
    reader = READERS[7]
    theirs = set(directory_of(reader).scopes)
    raw = _raw(database, path, APP, reader, 300)
    assert raw
    assert all(set(scopes) <= theirs for scopes in raw)
    unbound = _raw(database, path, "postgres", reader, 300)  # a superuser: no policy binds
    assert not all(set(scopes) <= theirs for scopes in unbound)  # so the filter was removed


SHARED = llama_index_table("shared")
"""LlamaIndex's shared table, which every reader's search reads."""


@contextmanager
def another_policy_admitting_every_row(database: Server) -> Iterator[None]:
    """A permissive policy of the app's own beside the reader policy, on both stores' shared
    tables, letting the app's role read every row: dropped afterwards."""
    tables = [f'"{table.schema}"."{table.name}"' for table in (PGVECTOR_TABLE, SHARED)]
    engine = create_engine(database.url())
    try:
        with engine.begin() as connection:
            for table in tables:
                connection.exec_driver_sql(
                    f'CREATE POLICY everything ON {table} FOR SELECT TO "{APP}" USING (true)'
                )
        yield
    finally:
        with engine.begin() as connection:
            for table in tables:
                connection.exec_driver_sql(f"DROP POLICY IF EXISTS everything ON {table}")
        engine.dispose()


@pytest.mark.parametrize("path", PATHS)
def test_where_another_policy_admits_more_rows_the_querys_guard_keeps_them_out(
    database: Server, best_of_own: Oracle, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader = READERS[7]
    theirs = set(directory_of(reader).scopes)
    with another_policy_admitting_every_row(database):
        want = best_of_own(framework_of(path), reader, QUESTIONS[0])
        assert answers(database, path, [(reader, QUESTIONS[0])]) == [want]
        raw = _raw(database, path, APP, reader, 300)
        assert raw
        assert all(set(scopes) <= theirs for scopes in raw)
        from aizk_integrations._stores.postgres import search

        monkeypatch.setattr(search, "reader_condition", lambda *_, **__: NO_FILTER)
        unguarded = _raw(database, path, APP, reader, 300)
        assert not all(set(scopes) <= theirs for scopes in unguarded)  # the policies admit more


@pytest.mark.parametrize("path", PATHS)
def test_a_plain_search_as_the_apps_role_names_no_reader_and_sees_nothing(
    database: Server, path: str
) -> None:
    assert answers(database, path, [(None, question) for question in QUESTIONS]) == [[], []]


def _pool_asks() -> list[Ask]:
    """200 requests from the 20 readers, every tenth a plain search naming no reader."""
    return [
        (None if number % 10 == 9 else READERS[number % 20], QUESTIONS[number % 2])
        for number in range(200)
    ]


@pytest.mark.usefixtures("filter_removed")
@pytest.mark.parametrize("path", PATHS)
def test_on_a_pool_of_4_connections_200_concurrent_requests_each_see_only_their_readers_rows(
    database: Server, best_of_own: Oracle, path: str
) -> None:
    asks = _pool_asks()
    got = answers(database, path, asks, concurrent=True, pool_size=4, max_overflow=0)
    framework = framework_of(path)
    want = [[] if r is None else best_of_own(framework, str(r), q) for r, q in asks]
    assert got == want


# -- what events, logs and traces carry --------------------------------------------------------


def foreign(reader: str) -> set[str]:
    """The numbers (`note0042`) of the notes `reader` may not read."""
    theirs = {note.id for note in readable_by(reader, NOTES)}
    return {note.text.split()[-1] for note in NOTES if note.id not in theirs}


def leaked(seen: str, reader: str) -> set[str]:
    return set(re.findall(r"note\d{4}", seen)) & foreign(reader)


async def streamed(chain: Any, question: str, config: RunnableConfig) -> str:
    """Everything LangChain's event stream and run log carry for one call, as text."""
    seen = [repr(event) async for event in chain.astream_events(question, config, version="v2")]
    seen += [repr(patch) async for patch in chain.astream_log(question, config)]
    return "\n".join(seen)


def _llama_index_seen(vector_store: PGVectorStore, reader: str, question: str, packed: bool) -> str:
    """Every event and callback payload of one retrieval, as text."""
    events, payloads = EveryEvent(), EveryPayload()
    root = get_dispatcher()
    root.add_event_handler(events)
    retriever = llama_index_retriever(vector_store, packed).for_reader(directory_of(reader))
    retriever.callback_manager = CallbackManager([payloads])
    try:
        retriever.retrieve(question)
    finally:
        root.event_handlers.remove(events)
    told = [repr(event.model_dump()) for event in events.events]
    return "\n".join([*told, *(repr(payload) for _, payload in payloads.payloads)])


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    reader=st.sampled_from(READERS),
    question=st.sampled_from(questions(20)),
    framework=st.sampled_from(["langchain", "llama-index"]),
    packed=st.booleans(),
)
@pytest.mark.filterwarnings("ignore:astream_log is deprecated")  # LangServe still serves it
def test_no_return_value_event_trace_or_log_line_carries_another_readers_text(
    database: Server,
    caplog: pytest.LogCaptureFixture,
    reader: str,
    question: str,
    framework: str,
    packed: bool,
) -> None:
    caplog.clear()
    with caplog.at_level(logging.DEBUG), caplog.at_level(logging.DEBUG, logger="sqlalchemy"):
        # SQLAlchemy's engine logs every row it fetches at DEBUG (its logger is WARN by default)
        if framework == "langchain":

            async def run() -> str:
                async with app_async_pgvector(database, APP, "shared") as store:
                    chain = langchain_retriever(store, packed)
                    returned = await chain.ainvoke(question, config=as_reader(reader))
                    return repr(returned) + await streamed(chain, question, as_reader(reader))

            seen = asyncio.run(run())
        else:
            vector_store = app_pgvectorstore(database, APP, "shared")
            try:
                seen = _llama_index_seen(vector_store, reader, question, packed)
            finally:
                asyncio.run(vector_store.close())
    assert "note" in seen  # the reader's own notes did travel
    assert "note" in caplog.text  # and the engine logged the rows it fetched
    assert leaked(seen, reader) == set()
    assert leaked(caplog.text, reader) == set()


@pytest.mark.filterwarnings("ignore:astream_log is deprecated")
def test_the_leak_check_sees_what_a_plain_search_of_the_shared_table_carries(
    database: Server, caplog: pytest.LogCaptureFixture
) -> None:
    reader = READERS[5]

    async def run() -> str:
        async with app_async_pgvector(database, "postgres", "shared") as store:  # no policy
            chain = store.as_retriever() | AizkEvidenceCompressor(budget=BUDGET).as_runnable()
            return await streamed(chain, QUESTIONS[0], as_reader(reader))

    with caplog.at_level(logging.DEBUG), caplog.at_level(logging.DEBUG, logger="sqlalchemy"):
        seen = asyncio.run(run())
    assert leaked(seen, reader)
    assert leaked(caplog.text, reader)


# -- a store that cannot be asked is refused, with the fix -------------------------------------


def test_a_pgvectorstore_built_from_engine_objects_is_refused_with_the_fix(
    database: Server,
) -> None:
    vector_store = PGVectorStore(
        engine=create_engine(database.url("psycopg2", user=APP)),
        async_engine=create_async_engine(database.url("asyncpg", user=APP)),
        table_name="shared",
        embed_dim=DIMENSIONS,
    )
    index = VectorStoreIndex.from_vector_store(vector_store, embed_model=WordEmbedding())
    with pytest.raises(ValueError, match="connection_string") as refused:
        LlamaIndexScoped(index)
    assert str(refused.value) == (
        "scoped retrieval over a PGVectorStore queries the database on an engine of its own, "
        "made from the store's connection_string and create_engine_kwargs (the store keeps its "
        "engines private), and this store was built from engine objects, without a connection "
        "string: build it with PGVectorStore(connection_string=..., async_connection_string=..., "
        "create_engine_kwargs={...pool settings}) or PGVectorStore.from_params(...)"
    )


@pytest.fixture(scope="module")
def never_set_up(postgres_server: Server) -> Iterator[Server]:
    """A database whose tables hold notes but on which `postgres_setup` never ran."""
    with app_database(postgres_server, "aizk_never_set_up", "aizk_never_set_up_app") as database:
        ingest_pgvector(database, {"shared": as_documents(NOTES[:20], "shared")})
        ingest_pgvectorstore(database, {"shared": as_nodes(NOTES[:20])})
        yield database


@pytest.mark.parametrize("path", PATHS)
def test_scoped_retrieval_over_a_table_never_set_up_says_to_run_postgres_setup(
    never_set_up: Server, path: str
) -> None:
    with pytest.raises(RuntimeError, match="was never set up") as refused:
        answers(never_set_up, path, [(READERS[0], QUESTIONS[0])], role="postgres")
    assert "run the SQL postgres_setup(store, role=...) returns" in str(refused.value)


def test_an_async_pgvector_asked_synchronously_says_to_call_ainvoke(database: Server) -> None:
    async def make() -> PGVector:
        async with app_async_pgvector(database, APP, "shared") as store:
            return store

    store = asyncio.run(make())
    retriever = AizkScopedRetriever(vectorstore=store)
    with pytest.raises(ValueError, match="async engine") as refused:
        retriever.invoke(QUESTIONS[0], config=as_reader(READERS[0]))
    assert str(refused.value) == (
        "this PGVector was made with an async engine, which serves only async calls: run "
        "scoped retrieval over it with ainvoke, or make the store with a sync engine "
        "(PGVector(connection=create_engine(...)))"
    )


def test_postgres_setup_refuses_a_store_that_is_not_its_frameworks_postgres_store() -> None:
    from langchain_core.vectorstores import InMemoryVectorStore
    from llama_index.core.vector_stores import SimpleVectorStore

    with pytest.raises(
        TypeError, match="takes langchain-postgres's PGVectorStore or PGVector store, not "
    ):
        postgres_setup(InMemoryVectorStore(WordEmbeddings()), role="app")
    with pytest.raises(TypeError, match="takes LlamaIndex's PGVectorStore, not "):
        llama_index_postgres_setup(SimpleVectorStore(), role="app")
