"""Scoped retrieval for LlamaIndex, through real stores in their embedded or local modes.

One shared store per kind holds the 20 readers' 1,000 notes of `tests/scoped_corpus.py`; the
oracle for each reader is the same LlamaIndex retrieval over a store of the same kind holding
only the notes that reader may read. Every note's text ends in its own number (`note0042`), so
a note's text can be spotted in any event, payload or log line.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import faiss
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager, CBEventType, EventPayload
from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
from llama_index.core.instrumentation.events.retrieval import RetrievalEndEvent
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.retrievers import QueryFusionRetriever
from llama_index.core.retrievers.fusion_retriever import FUSION_MODES
from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode
from llama_index.core.vector_stores import SimpleVectorStore
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryResult,
)
from llama_index.vector_stores.chroma import ChromaVectorStore
from llama_index.vector_stores.faiss import FaissVectorStore
from llama_index.vector_stores.qdrant import QdrantVectorStore
from qdrant_client import AsyncQdrantClient, QdrantClient

from aizk_integrations import Scope, ScopeDirectory, scope_metadata
from aizk_integrations.llama_index import (
    AizkEvidencePackedEvent,
    AizkEvidencePostprocessor,
    AizkScopedRetriever,
    ScopeFilter,
)
from tests.adapters.stores import chroma_client
from tests.adapters.tracing import EveryEvent, EveryPayload
from tests.adapters.word_embedding import WordEmbedding, word_vector
from tests.scoped_corpus import (
    DIMENSIONS,
    ORGANIZATIONS,
    READERS,
    TOPICS,
    Note,
    directory_of,
    notes,
    questions,
    readable_by,
)

NOTES = notes()
QUESTIONS = questions(3)
KINDS = ("simple", "chroma", "qdrant", "faiss")
EXACT_RANKING = ("simple", "qdrant", "faiss")
"""Stores that rank by brute force; Chroma's HNSW index is approximate."""
BUDGET = 120
"""Tokens of evidence: about ten notes, so most blocks take the store two or three pages."""


def node_id(note: Note) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, note.id))  # Qdrant takes only UUIDs or ints


def as_nodes(stored: list[Note]) -> list[TextNode]:
    """The documented ingestion: scopes as `scope_metadata` writes them, out of both views."""
    return [
        TextNode(
            id_=node_id(note),
            text=note.text,
            metadata=scope_metadata(list(note.scopes)),
            excluded_embed_metadata_keys=["scopes"],
            excluded_llm_metadata_keys=["scopes"],
            embedding=word_vector(note.text),  # what WordEmbedding gives, computed once per note
        )
        for note in stored
    ]


_qdrant = QdrantClient(":memory:")


def new_store(kind: str, name: str) -> BasePydanticVectorStore:
    if kind == "simple":
        return SimpleVectorStore()
    if kind == "chroma":
        collection = chroma_client().create_collection(
            f"llama-index-{name}", embedding_function=None
        )
        chroma = ChromaVectorStore(chroma_collection=collection)
        chroma.flat_metadata = False  # its constructor drops a flat_metadata keyword
        return chroma
    if kind == "qdrant":
        # No payload index on the document id: local mode warns that it would have no effect.
        return QdrantVectorStore(client=_qdrant, collection_name=name, index_doc_id=False)
    return FaissVectorStore(faiss_index=faiss.IndexFlatL2(DIMENSIONS))


def new_index(kind: str, stored: list[Note], name: str) -> VectorStoreIndex:
    return VectorStoreIndex(
        as_nodes(stored),
        storage_context=StorageContext.from_defaults(vector_store=new_store(kind, name)),
        embed_model=WordEmbedding(),
    )


@cache
def index_of(kind: str, reader: str | None = None) -> VectorStoreIndex:
    """The shared index of a kind, or (with a reader) one holding only that reader's notes."""
    stored = NOTES if reader is None else readable_by(reader, NOTES)
    return new_index(kind, stored, f"{kind}-{reader or 'shared'}")


def ids(nodes: list[NodeWithScore]) -> list[str]:
    return [scored.node.node_id for scored in nodes]


def own_best(kind: str, reader: str, question: str, k: int) -> list[NodeWithScore]:
    """Plain LlamaIndex retrieval over the reader's own store: the oracle."""
    return index_of(kind, reader).as_retriever(similarity_top_k=k).retrieve(question)


def own_block(kind: str, reader: str, question: str, evidence: AizkEvidencePostprocessor) -> str:
    everything = own_best(kind, reader, question, len(readable_by(reader, NOTES)))
    packed = evidence.for_reader(directory_of(reader)).postprocess_nodes(
        everything, query_str=question
    )
    return packed[0].node.get_content()


def kept_notes(text: str) -> set[str]:
    """The numbers of the notes whose text appears in `text`, however it is quoted."""
    return set(re.findall(r"note\d{4}", text))


def foreign(reader: str) -> set[str]:
    """The numbers of the notes `reader` may not read: never to be seen while they read."""
    theirs = {note.id for note in readable_by(reader, NOTES)}
    return {note.text.split()[-1] for note in NOTES if note.id not in theirs}


FOREIGN = {reader: foreign(reader) for reader in READERS}


def leaked(texts: list[str], reader: str) -> set[str]:
    return kept_notes("\n".join(texts)) & FOREIGN[reader]


@contextmanager
def store_calls(monkeypatch: pytest.MonkeyPatch, kind: str) -> Iterator[list[list[str]]]:
    """The stored items each query of the store returned, call by call, as node ids."""
    index = index_of(kind)
    store_type = type(index.vector_store)
    query = store_type.query
    returned: list[list[str]] = []

    def recorded(self: Any, *args: Any, **kwargs: Any) -> VectorStoreQueryResult:
        result = query(self, *args, **kwargs)
        by_position = index.index_struct.nodes_dict  # FAISS answers with its own positions
        returned.append([by_position.get(each, each) for each in result.ids or []])
        return result

    with monkeypatch.context() as patch:
        patch.setattr(store_type, "query", recorded)
        yield returned


def sizes(returned: list[list[str]]) -> list[int]:
    return [len(page) for page in returned]


@pytest.mark.parametrize("kind", KINDS)
def test_every_reader_retrieves_what_a_store_of_only_their_notes_gives(
    monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    retriever = AizkScopedRetriever(index_of(kind), similarity_top_k=4)
    equal = shared = total = 0
    for reader in READERS:
        scoped = retriever.for_reader(directory_of(reader))
        for question in QUESTIONS:
            with store_calls(monkeypatch, kind) as returned:
                got = ids(scoped.retrieve(question))
            want = ids(own_best(kind, reader, question, 4))
            assert len(got) == 4
            if kind == "qdrant":  # filtered exactly: the first page is the answer
                assert sizes(returned) == [4]
            equal += got == want
            shared += len(set(got) & set(want))
            total += len(want)
    if kind in EXACT_RANKING:
        assert equal == len(READERS) * len(QUESTIONS)
    else:
        assert shared / total >= 0.95


@pytest.mark.parametrize("kind", KINDS)
def test_every_readers_block_is_the_block_a_store_of_only_their_notes_gives(kind: str) -> None:
    evidence = AizkEvidencePostprocessor(budget=BUDGET)
    retriever = AizkScopedRetriever(index_of(kind), evidence=evidence)
    shared = total = 0
    for position, reader in enumerate(READERS):
        question = QUESTIONS[position % len(QUESTIONS)]
        (block,) = retriever.for_reader(directory_of(reader)).retrieve(question)
        got, want = block.node.get_content(), own_block(kind, reader, question, evidence)
        if kind in EXACT_RANKING:
            assert got == want
        shared += len(kept_notes(got) & kept_notes(want))
        total += len(kept_notes(want))
    assert shared / total >= 0.95


def test_with_return_nodes_the_retriever_returns_the_nodes_the_postprocessor_keeps() -> None:
    evidence = AizkEvidencePostprocessor(budget=BUDGET, return_nodes=True)
    reader, question = "user-07", QUESTIONS[0]
    got = AizkScopedRetriever(index_of("qdrant"), evidence=evidence).for_reader(
        directory_of(reader)
    )
    everything = own_best("qdrant", reader, question, len(readable_by(reader, NOTES)))
    want = evidence.for_reader(directory_of(reader)).postprocess_nodes(
        everything, query_str=question
    )
    kept = got.retrieve(question)
    assert [(n.node.node_id, n.node.get_content(), n.node.metadata) for n in kept] == [
        (n.node.node_id, n.node.get_content(), n.node.metadata) for n in want
    ]


def test_a_query_engine_prompt_holds_the_readers_own_block() -> None:
    reader, question = "user-11", QUESTIONS[1]
    evidence = AizkEvidencePostprocessor(budget=BUDGET)
    retriever = AizkScopedRetriever(index_of("chroma"), evidence=evidence)
    engine = RetrieverQueryEngine.from_args(
        retriever.for_reader(directory_of(reader)), llm=MockLLM()
    )
    response = engine.query(question)  # MockLLM answers with the prompt it was given
    block = own_block("chroma", reader, question, evidence)
    assert block in str(response)
    assert [scored.node.get_content() for scored in response.source_nodes] == [block]


# -- what events, callbacks and logs carry ---------------------------------------------------


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@contextmanager
def everything_recorded() -> Iterator[tuple[EveryEvent, Lines]]:
    """Record every event, and every log line of LlamaIndex and ours down to DEBUG."""
    events, lines = EveryEvent(), Lines()
    root = get_dispatcher()
    root.add_event_handler(events)
    loggers = [logging.getLogger(name) for name in ("llama_index", "aizk_integrations")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.DEBUG)
    logging.getLogger().addHandler(lines)
    try:
        yield events, lines
    finally:
        logging.getLogger().removeHandler(lines)
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
        root.event_handlers.remove(events)


def retrieved_texts(events: EveryEvent) -> list[str]:
    return [
        scored.node.get_content()
        for event in events.events
        if isinstance(event, RetrievalEndEvent)
        for scored in event.nodes
    ]


def ask(
    index: VectorStoreIndex,
    reader: str,
    question: str,
    *,
    evidence: bool,
    path: str,
    payloads: EveryPayload,
) -> None:
    """One request for `reader`, through a query engine or the retriever, sync or async."""
    retriever = AizkScopedRetriever(
        index, evidence=AizkEvidencePostprocessor(budget=BUDGET) if evidence else None
    )
    retriever.callback_manager = CallbackManager([payloads])
    bound = retriever.for_reader(directory_of(reader))
    if path == "engine":
        RetrieverQueryEngine.from_args(bound, llm=MockLLM()).query(question)
    elif path == "engine, async":
        asyncio.run(RetrieverQueryEngine.from_args(bound, llm=MockLLM()).aquery(question))
    elif path == "retriever, async":
        asyncio.run(bound.aretrieve(question))
    else:
        bound.retrieve(question)


PATHS = ("engine", "engine, async", "retriever", "retriever, async")


@settings(
    max_examples=24,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    kind=st.sampled_from(KINDS),
    reader=st.sampled_from(READERS),
    question=st.lists(st.sampled_from(TOPICS), min_size=1, max_size=3).map(" ".join),
    evidence=st.booleans(),
    path=st.sampled_from(PATHS),
)
def test_no_event_payload_or_log_line_carries_another_readers_text(
    kind: str, reader: str, question: str, evidence: bool, path: str
) -> None:
    payloads = EveryPayload()
    # Built before recording: ingestion embeds, and so sends, every note.
    index = async_qdrant_index() if kind == "qdrant" and "async" in path else index_of(kind)
    with everything_recorded() as (events, lines):
        ask(index, reader, question, evidence=evidence, path=path, payloads=payloads)
    texts = [repr(event.model_dump()) for event in events.events]
    texts += [repr(payload) for _, payload in payloads.payloads]
    assert leaked(texts + lines.lines, reader) == set()
    # The recording is not empty: the retrieval event and payload carry the reader's own notes.
    assert kept_notes(" ".join(retrieved_texts(events))) - FOREIGN[reader]
    assert any(
        event == CBEventType.RETRIEVE and EventPayload.NODES in payload
        for event, payload in payloads.payloads
    )
    assert any(isinstance(event, AizkEvidencePackedEvent) for event in events.events) == evidence


def test_the_leak_check_sees_what_filtering_after_top_k_leaks() -> None:
    # The same recording around the pipeline scoped retrieval replaces: top-k, then the packer.
    reader, payloads = "user-05", EveryPayload()
    top_k = index_of("faiss").as_retriever(similarity_top_k=4)
    top_k.callback_manager = CallbackManager([payloads])
    engine = RetrieverQueryEngine.from_args(
        top_k,
        llm=MockLLM(),
        node_postprocessors=[AizkEvidencePostprocessor().for_reader(directory_of(reader))],
    )
    with everything_recorded() as (events, lines):
        engine.query(QUESTIONS[0])
    assert leaked(retrieved_texts(events), reader)
    assert leaked(lines.lines, reader)
    assert leaked([repr(payload) for _, payload in payloads.payloads], reader)


def test_the_chroma_store_logs_what_it_returns_which_scoped_retrieval_keeps_quiet() -> None:
    # Under Chroma's necessary filter the store returns nodes the re-check then withholds, and
    # its own DEBUG log quotes each one: the line scoped retrieval keeps out of the logs.
    reader = "user-05"
    store = index_of("chroma").vector_store
    where = {"$or": [{"scopes": {"$contains": each}} for each in directory_of(reader).scopes]}
    query = VectorStoreQuery(query_embedding=word_vector(QUESTIONS[0]), similarity_top_k=64)
    with everything_recorded() as (_, lines):
        store.query(query, where=where)
    assert leaked(lines.lines, reader)
    with everything_recorded() as (_, lines):
        AizkScopedRetriever(index_of("chroma"), similarity_top_k=64, max_fetch=64).for_reader(
            directory_of(reader)
        ).retrieve(QUESTIONS[0])
    assert leaked(lines.lines, reader) == set()
    debug, capped = lines.lines  # its own two lines: what the call cost, and where it stopped
    assert debug == "aizk scoped retrieval: 1 store calls, 64 nodes fetched"
    assert capped.startswith("aizk: scoped retrieval stopped at max_fetch (64 documents asked")


# -- the store pages, the walk pulls ---------------------------------------------------------


def pages_for(position: int, first: int = 4) -> int:
    """Store calls the pager needs to reach the item at 1-based `position` of the store's
    ranking: pages of first, 2 first, 4 first... each a longer prefix of the same ranking."""
    return 1 + max(0, math.ceil(math.log2(position / first)))


def block_counts(block: NodeWithScore) -> dict[str, int]:
    counts: dict[str, int] = block.node.metadata["aizk_counts"]
    return counts


@pytest.mark.parametrize("kind", ["qdrant", "faiss"])
def test_the_store_is_asked_for_more_only_while_the_walk_has_room(
    monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    # Qdrant filters exactly, so its ranking is the reader's own; FAISS takes no filter, so
    # the pager walks the whole store's ranking. Either way the walk stops one past its cut.
    # Each reader's is a new retriever's first request, whose first page is `similarity_top_k`.
    question = QUESTIONS[2]
    everyone = ids(index_of(kind).as_retriever(similarity_top_k=len(NOTES)).retrieve(question))
    for reader in READERS:
        theirs = {node_id(note) for note in readable_by(reader, NOTES)}
        ranking = [each for each in everyone if kind == "faiss" or each in theirs]
        positions = [place for place, each in enumerate(ranking, 1) if each in theirs]
        retriever = AizkScopedRetriever(
            index_of(kind), evidence=AizkEvidencePostprocessor(budget=BUDGET)
        )
        with store_calls(monkeypatch, kind) as returned:
            (block,) = retriever.for_reader(directory_of(reader)).retrieve(question)
        counts = block_counts(block)
        read = counts["kept"] + counts["cut_by_budget"]  # the kept prefix and the one past it
        assert len(returned) == pages_for(positions[read - 1]), reader
        assert sizes(returned) == [4 * 2**call for call in range(len(returned))]


def test_a_reader_whose_first_page_fills_the_budget_costs_one_store_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A budget of one note: the walk reads the first readable note and the one that ends it.
    # With Qdrant's exact filter every first page holds both; under a necessary filter or none,
    # only some readers' first pages do, and only those readers get away with one call.
    one_note = AizkEvidencePostprocessor(budget=12)  # a note costs 8 to 11 tokens
    for kind in KINDS:
        retriever = AizkScopedRetriever(index_of(kind), evidence=one_note)
        for reader in READERS:
            theirs = {node_id(note) for note in readable_by(reader, NOTES)}
            with store_calls(monkeypatch, kind) as returned:
                (block,) = retriever.for_reader(directory_of(reader)).retrieve(QUESTIONS[0])
            assert block_counts(block)["kept"] == 1
            filled = len(set(returned[0]) & theirs) >= 2
            assert filled or kind != "qdrant"
            assert (sizes(returned) == [4]) == filled, (kind, reader)


def test_what_each_store_returns_is_what_its_filter_promises(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Qdrant and SimpleVectorStore: only readable nodes. Chroma: nodes sharing a scope with the
    # reader, some of them unreadable (which the re-check withholds). FAISS: anything.
    directory = directory_of("user-02")
    mine = set(directory.scopes.keys())
    scopes = {node_id(note): set(note.scopes) for note in NOTES}
    for kind in KINDS:
        scoped = AizkScopedRetriever(index_of(kind), similarity_top_k=64, max_fetch=64)
        with store_calls(monkeypatch, kind) as returned:
            scoped.for_reader(directory).retrieve(QUESTIONS[0])
        (page,) = returned
        items = [scopes[each] for each in page]
        assert len(items) == 64
        if kind in ("qdrant", "simple"):
            assert all(item <= mine for item in items)
        elif kind == "chroma":
            assert all(item & mine for item in items)
            assert not all(item <= mine for item in items)
        else:
            assert not all(item & mine for item in items)


# -- naming the reader -----------------------------------------------------------------------


def test_without_a_reader_retrieval_returns_nothing_and_says_how_to_name_one(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    for evidence in (None, AizkEvidencePostprocessor()):
        retriever = AizkScopedRetriever(index_of("simple"), evidence=evidence)
        caplog.clear()
        with store_calls(monkeypatch, "simple") as returned:
            assert retriever.retrieve(QUESTIONS[0]) == []
            assert asyncio.run(retriever.aretrieve(QUESTIONS[0])) == []
            response = RetrieverQueryEngine.from_args(retriever, llm=MockLLM()).query("x")
        assert returned == []
        assert response.source_nodes == []
        warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(warnings) == 3  # one per call
        assert warnings[0].name == "aizk_integrations.llama_index"
        assert warnings[0].getMessage() == (
            "aizk: scoped retrieval has no reader for this call, so it retrieved nothing (it "
            "never falls back to showing anyone's notes): bind the request's reader with "
            "retriever.for_reader(reader)"
        )


@pytest.mark.parametrize(
    "kind",
    KINDS,
)
def test_a_reader_with_notes_gets_their_block_without_a_warning(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    retriever = AizkScopedRetriever(index_of(kind), evidence=AizkEvidencePostprocessor())
    with caplog.at_level(logging.WARNING):
        for reader in READERS[::5]:
            assert retriever.for_reader(directory_of(reader)).retrieve(QUESTIONS[0])
    assert [record.getMessage() for record in caplog.records] == []


def test_for_reader_and_reader_at_construction_give_the_same_result() -> None:
    evidence = AizkEvidencePostprocessor(budget=BUDGET)
    for with_evidence in (None, evidence):
        retriever = AizkScopedRetriever(index_of("faiss"), evidence=with_evidence)
        for reader in READERS[:5]:
            directory = directory_of(reader)
            bound = retriever.for_reader(directory).retrieve(QUESTIONS[0])
            built = AizkScopedRetriever(
                index_of("faiss"), reader=directory, evidence=with_evidence
            ).retrieve(QUESTIONS[0])
            assert ids(bound) == ids(built)
            assert bound[0].node.get_content() == built[0].node.get_content()


def test_a_bound_reader_wins_over_the_built_one_and_leaves_the_original_as_it_was() -> None:
    sam, ana = directory_of("user-00"), directory_of("user-01")
    sams, anas = (ids(own_best("qdrant", r, QUESTIONS[0], 4)) for r in ("user-00", "user-01"))
    unbound = AizkScopedRetriever(index_of("qdrant"))
    built = AizkScopedRetriever(index_of("qdrant"), reader=ana)
    assert ids(unbound.for_reader(sam).retrieve(QUESTIONS[0])) == sams
    assert ids(built.for_reader(sam).retrieve(QUESTIONS[0])) == sams
    assert unbound.retrieve(QUESTIONS[0]) == []
    assert ids(built.retrieve(QUESTIONS[0])) == anas != sams


def test_for_reader_refuses_what_is_not_a_directory() -> None:
    with pytest.raises(TypeError, match="for_reader needs a ScopeDirectory"):
        AizkScopedRetriever(index_of("simple")).for_reader(None)  # type: ignore[arg-type]


def test_the_postprocessor_given_as_evidence_names_no_reader_of_its_own() -> None:
    with pytest.raises(ValueError, match="evidence has a reader of its own"):
        AizkScopedRetriever(
            index_of("simple"),
            evidence=AizkEvidencePostprocessor(reader=directory_of("user-00")),
        )
    with pytest.raises(ValueError, match="give both the same scopes_key"):
        AizkScopedRetriever(
            index_of("simple"), evidence=AizkEvidencePostprocessor(scopes_key="acl")
        )
    with pytest.raises(ValueError, match="max_fetch must be at least 8"):
        AizkScopedRetriever(index_of("simple"), similarity_top_k=8, max_fetch=4)


# -- async -----------------------------------------------------------------------------------


@cache
def async_qdrant_index() -> VectorStoreIndex:
    """A Qdrant index served by an async client: local mode keeps no data between clients."""
    store = QdrantVectorStore(
        aclient=AsyncQdrantClient(":memory:"), collection_name="async", index_doc_id=False
    )
    index = VectorStoreIndex(
        [],
        storage_context=StorageContext.from_defaults(vector_store=store),
        embed_model=WordEmbedding(),
        use_async=True,
    )
    asyncio.run(index.ainsert_nodes(as_nodes(NOTES)))
    return index


@pytest.mark.parametrize("kind", KINDS)
def test_the_async_path_gives_what_the_sync_path_gives(kind: str) -> None:
    evidence = AizkEvidencePostprocessor(budget=BUDGET)
    sync_index = index_of(kind)
    async_index = async_qdrant_index() if kind == "qdrant" else sync_index
    for with_evidence in (None, evidence):
        for reader in READERS[::5]:
            directory = directory_of(reader)
            want = AizkScopedRetriever(sync_index, evidence=with_evidence).for_reader(directory)
            got = AizkScopedRetriever(async_index, evidence=with_evidence).for_reader(directory)
            expected = want.retrieve(QUESTIONS[0])
            actual = asyncio.run(got.aretrieve(QUESTIONS[0]))
            assert [n.node.get_content() for n in actual] == [
                n.node.get_content() for n in expected
            ]


def test_the_async_path_asks_the_store_for_the_same_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    # The FAISS store answers `aquery` with `query`, so both paths are counted in one place.
    # Two new retrievers, so neither call's first page learns from the other's.
    def retriever() -> AizkScopedRetriever:
        return AizkScopedRetriever(
            index_of("faiss"), evidence=AizkEvidencePostprocessor(budget=BUDGET)
        ).for_reader(directory_of("user-13"))

    with store_calls(monkeypatch, "faiss") as sync_pages:
        retriever().retrieve(QUESTIONS[0])
    with store_calls(monkeypatch, "faiss") as async_pages:
        asyncio.run(retriever().aretrieve(QUESTIONS[0]))
    assert async_pages == sync_pages
    assert len(sync_pages) > 1


# -- other stores and retrievers -------------------------------------------------------------


def test_a_scoped_query_narrows_any_store_and_what_it_lets_through_is_checked_again() -> None:
    asked: list[frozenset[str]] = []

    def every_organization(scope_ids: frozenset[str]) -> ScopeFilter:
        asked.append(scope_ids)  # too wide on purpose: every organization's notes pass
        wide = sorted(scope_ids | set(ORGANIZATIONS))
        return ScopeFilter(
            filters=MetadataFilters(
                filters=[MetadataFilter(key="scopes", operator=FilterOperator.ANY, value=wide)]
            )
        )

    retriever = AizkScopedRetriever(index_of("simple"), scoped_query=every_organization)
    for reader in READERS[:5]:
        got = retriever.for_reader(directory_of(reader)).retrieve(QUESTIONS[0])
        assert ids(got) == ids(own_best("simple", reader, QUESTIONS[0], 4))
    assert asked[0] == frozenset(directory_of(READERS[0]).scopes.keys())


def test_a_scoped_query_must_answer_with_a_scope_filter() -> None:
    retriever = AizkScopedRetriever(
        index_of("simple"),
        reader=directory_of("user-00"),
        scoped_query=lambda scope_ids: {"where": {}},  # type: ignore[arg-type,return-value]
    )
    with pytest.raises(TypeError, match="scoped_query must return a ScopeFilter"):
        retriever.retrieve(QUESTIONS[0])


SAM, ANA = "sam", "ana"
MEETING = "Meeting moved to 5pm."


@pytest.mark.parametrize("mode", ["reciprocal_rerank", "simple"])
@pytest.mark.parametrize("use_async", [False, True])
def test_query_fusion_over_scoped_retrievers_keeps_two_tenants_identical_texts_apart(
    mode: str, use_async: bool
) -> None:
    tenants = [
        Note(id=f"{tenant}-{number}", text=text, scopes=(tenant,))
        for tenant in (SAM, ANA)
        for number, text in enumerate([MEETING, f"{tenant} kettle harbor", "piano lecture"])
    ]
    scoped = [
        AizkScopedRetriever(new_index(kind, tenants, f"fusion-{mode}-{use_async}"))
        for kind in ("simple", "chroma")
    ]
    for tenant in (SAM, ANA):
        reader = ScopeDirectory(scopes={tenant: Scope(name="private")})
        retrievers: list[BaseRetriever] = [each.for_reader(reader) for each in scoped]
        fused = QueryFusionRetriever(
            retrievers, llm=MockLLM(), mode=FUSION_MODES(mode), num_queries=1, use_async=use_async
        )
        found = fused.retrieve("meeting moved")
        assert {scored.node.metadata["scopes"][0] for scored in found} == {tenant}
        meeting = [scored for scored in found if scored.node.get_content() == MEETING]
        assert ids(meeting) == [node_id(Note(id=f"{tenant}-0", text=MEETING, scopes=()))]


# -- ingestion -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_scope_metadata_survives_each_stores_round_trip_out_of_the_prompt(kind: str) -> None:
    org = uuid.UUID("5b1d8c1e-3c1a-4d3e-9f10-2a4b6c8d0e12")
    note = TextNode(
        id_=str(uuid.uuid4()),
        text="garden budget round trip",
        metadata=scope_metadata(["sam", org.hex.upper(), 42]),
        excluded_embed_metadata_keys=["scopes"],
        excluded_llm_metadata_keys=["scopes"],
    )
    index = VectorStoreIndex(
        [note],
        storage_context=StorageContext.from_defaults(vector_store=new_store(kind, f"trip-{kind}")),
        embed_model=WordEmbedding(),
    )
    reader = ScopeDirectory(
        scopes={"sam": Scope(name="private"), str(org): Scope(name="team"), "42": Scope(name="db")}
    )
    (found,) = AizkScopedRetriever(index, reader=reader).retrieve("garden budget")
    assert found.node.metadata["scopes"] == sorted(["42", "sam", str(org)])
    for mode in (MetadataMode.LLM, MetadataMode.EMBED):
        assert found.node.get_content(mode) == "garden budget round trip"


def test_a_chroma_store_left_with_flat_metadata_is_refused_with_the_fix() -> None:
    collection = chroma_client().create_collection("llama-index-flat", embedding_function=None)
    store = ChromaVectorStore(chroma_collection=collection, flat_metadata=False)
    assert store.flat_metadata  # the keyword is dropped: why the retriever checks
    index = VectorStoreIndex(
        [],
        storage_context=StorageContext.from_defaults(vector_store=store),
        embed_model=WordEmbedding(),
    )
    with pytest.raises(ValueError, match="flat_metadata") as refused:
        AizkScopedRetriever(index)
    assert str(refused.value) == (
        "scoped retrieval needs the scope ids stored as a list, and this index's "
        "ChromaVectorStore keeps flat metadata (flat_metadata=True), which refuses lists; set "
        "`vector_store.flat_metadata = False` on the store before adding nodes "
        "(ChromaVectorStore's constructor drops a flat_metadata keyword), then write scopes "
        "with scope_metadata"
    )


def test_importing_the_adapter_loads_no_store_package() -> None:
    probe = (
        "import sys, aizk_integrations.llama_index;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'chromadb', 'qdrant_client', 'faiss'} or m.startswith('llama_index.vector_stores.')))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert completed.stdout.strip() == "[]"
