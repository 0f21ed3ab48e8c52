"""Scoped retrieval for LangChain, through the real stores: the store is asked only for what the
request's reader may read, so no reader is starved and nothing of another reader's leaves it.

One shared store per supported kind (in-memory, Chroma, Qdrant, FAISS, each embedded) holds the
1,000 notes of 20 readers (`tests/scoped_corpus.py`). Each law compares a reader's answer from
the shared store with the same retrieval over a store holding only the notes that reader may
read.
"""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_chroma import Chroma
from langchain_classic.retrievers import EnsembleRetriever
from langchain_community.vectorstores import FAISS
from langchain_community.vectorstores.utils import filter_complex_metadata
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import ConfigurableField, RunnableConfig
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from langchain_qdrant import QdrantVectorStore
from pydantic import Field

from aizk_integrations import ScopeDirectory, scope_metadata
from aizk_integrations.langchain import (
    AizkEvidenceCompressor,
    AizkEvidenceRetriever,
    AizkScopedRetriever,
)
from tests.adapters.stores import chroma_client
from tests.scoped_corpus import READERS, Note, directory_of, hash_vector, notes, questions

NOTES = notes()
BUDGET = 120
"""Enough for about a dozen notes, as a budget of 2,048 is for real excerpts: more than one first
page of four."""


class WordEmbeddings(Embeddings):
    """`hash_vector` as a LangChain embedding (see `tests/scoped_corpus.py` for why not a fake)."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [hash_vector(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return hash_vector(text)


def as_documents(stored: list[Note]) -> list[Document]:
    return [
        Document(note.text, id=str(uuid.uuid5(uuid.NAMESPACE_URL, note.id)), metadata=note.metadata)
        for note in stored
    ]


def in_memory(documents: list[Document], name: str) -> VectorStore:
    store = InMemoryVectorStore(WordEmbeddings())
    store.add_documents(documents)
    return store


def chroma(documents: list[Document], name: str) -> VectorStore:
    store = Chroma(
        collection_name=name, embedding_function=WordEmbeddings(), client=chroma_client()
    )
    store.add_documents(documents, ids=[document.id or "" for document in documents])
    return store


def qdrant(documents: list[Document], name: str) -> VectorStore:
    ids = [document.id or "" for document in documents]
    return QdrantVectorStore.from_documents(
        documents, WordEmbeddings(), location=":memory:", collection_name=name, ids=ids
    )


def faiss(documents: list[Document], name: str) -> VectorStore:
    ids = [document.id or "" for document in documents]
    return FAISS.from_documents(documents, WordEmbeddings(), ids=ids)


STORES: dict[str, Callable[[list[Document], str], VectorStore]] = {
    "in-memory": in_memory,
    "chroma": chroma,
    "qdrant": qdrant,
    "faiss": faiss,
}
_built: dict[str, VectorStore] = {}


def store_of(kind: str, reader: str | None = None) -> VectorStore:
    """The shared store of a kind, or (with a reader) one holding only that reader's notes."""
    name = f"{kind}-{reader or 'shared'}"
    if name not in _built:
        stored = NOTES if reader is None else readable(reader)
        _built[name] = STORES[kind](as_documents(stored), name)
    return _built[name]


def readable(reader: str) -> list[Note]:
    return [note for note in NOTES if directory_of(reader).may_read(list(note.scopes))]


def as_reader(reader: str) -> RunnableConfig:
    return {"configurable": {"aizk_reader": directory_of(reader)}}


def texts(documents: list[Document]) -> list[str]:
    return [document.page_content for document in documents]


def foreign_notes(reader: str) -> set[str]:
    """The note numbers (`note0042`) of every note the reader may not read."""
    theirs = {note.id for note in readable(reader)}
    return {note.text.split()[-1] for note in NOTES if note.id not in theirs}


def leaked(text: str, reader: str) -> set[str]:
    return set(re.findall(r"note\d{4}", text)) & foreign_notes(reader)


@pytest.fixture(params=list(STORES), ids=list(STORES))
def kind(request: pytest.FixtureRequest) -> str:
    chosen: str = request.param
    return chosen


# Every reader gets what a store of their own would give


def test_each_reader_gets_the_top_k_a_store_of_their_own_notes_gives(kind: str) -> None:
    shared = AizkScopedRetriever(vectorstore=store_of(kind), search_kwargs={"k": 4})
    for reader in READERS:
        own = AizkScopedRetriever(vectorstore=store_of(kind, reader), search_kwargs={"k": 4})
        for question in questions(2):
            got = texts(shared.invoke(question, config=as_reader(reader)))
            expected = texts(own.invoke(question, config=as_reader(reader)))
            assert len(got) == 4
            if kind == "chroma":  # an approximate (HNSW) index: most, not necessarily all
                assert len(set(got) & set(expected)) >= 3, (reader, question)
            else:
                assert got == expected, (reader, question)


def test_each_readers_block_is_the_block_of_a_store_of_their_own_notes(kind: str) -> None:
    packer = AizkEvidenceCompressor(budget=BUDGET)
    for reader in READERS:
        question = questions(1, seed=READERS.index(reader))[0]
        blocks = [
            AizkEvidenceRetriever(
                base_retriever=AizkScopedRetriever(vectorstore=store, search_kwargs={"k": 4}),
                compressor=packer,
            ).invoke(question, config=as_reader(reader))
            for store in (store_of(kind), store_of(kind, reader))
        ]
        shared, own = (block[0] for block in blocks)
        assert shared.metadata["aizk_counts"]["kept"] > 4  # the walk pulled more than a page
        if kind == "chroma":
            kept_shared = {item["text"] for item in shared.metadata["aizk_recall"]["evidence"]}
            kept_own = {item["text"] for item in own.metadata["aizk_recall"]["evidence"]}
            assert len(kept_shared & kept_own) >= 0.95 * len(kept_own)
        else:
            assert shared.page_content == own.page_content


def test_filtering_after_top_k_starves_readers_and_scoped_retrieval_does_not(kind: str) -> None:
    packer = AizkEvidenceCompressor(budget=BUDGET)
    unscoped = store_of(kind).as_retriever(search_kwargs={"k": 4}) | packer.as_runnable()
    scoped = (
        AizkScopedRetriever(vectorstore=store_of(kind), search_kwargs={"k": 4})
        | packer.as_runnable()
    )
    starved = {"unscoped": 0, "scoped": 0}
    for reader in READERS:
        for question in questions(3):
            for name, chain in (("unscoped", unscoped), ("scoped", scoped)):
                if not chain.invoke(question, config=as_reader(reader)):
                    starved[name] += 1
    assert starved["scoped"] == 0
    assert starved["unscoped"] > len(READERS)  # most questions of most readers: see the docs


# Nothing of another reader's leaves the store


async def streamed(chain: Any, question: str, config: RunnableConfig) -> str:
    """Everything LangChain's event stream and run log carry for one call, as text."""
    seen = [repr(event) async for event in chain.astream_events(question, config, version="v2")]
    seen += [repr(patch) async for patch in chain.astream_log(question, config)]
    return "\n".join(seen)


@pytest.mark.filterwarnings("ignore:astream_log is deprecated")  # LangServe still serves it
@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    reader=st.sampled_from(READERS),
    question=st.sampled_from(questions(20)),
    kind=st.sampled_from(list(STORES)),
    packed=st.booleans(),
)
def test_events_and_logs_carry_no_text_of_another_reader(
    reader: str, question: str, kind: str, packed: bool, caplog: pytest.LogCaptureFixture
) -> None:
    scoped = AizkScopedRetriever(vectorstore=store_of(kind), search_kwargs={"k": 4})
    packer = AizkEvidenceCompressor(budget=BUDGET)
    chain = (
        AizkEvidenceRetriever(base_retriever=scoped, compressor=packer)
        if packed
        else scoped | packer.as_runnable()
    )
    with caplog.at_level(logging.DEBUG):
        seen = asyncio.run(streamed(chain, question, as_reader(reader)))
    assert "note" in seen  # the reader's own notes did travel
    assert leaked(seen, reader) == set()
    assert leaked(caplog.text, reader) == set()


@pytest.mark.filterwarnings("ignore:astream_log is deprecated")
def test_the_event_check_finds_what_filtering_after_top_k_leaks(kind: str) -> None:
    packer = AizkEvidenceCompressor(budget=BUDGET)
    unscoped = store_of(kind).as_retriever(search_kwargs={"k": 4}) | packer.as_runnable()
    leaking = [
        reader
        for reader in READERS[:5]
        if leaked(asyncio.run(streamed(unscoped, "garden budget", as_reader(reader))), reader)
    ]
    assert len(leaking) >= 4


# The store pages, the walk pulls


class Counting:
    """A `StoreSearch` that asks the store the built-in way and counts what it asks."""

    def __init__(self, store: VectorStore) -> None:
        self.calls: list[int] = []
        self.returned = 0
        self._store = store

    def __call__(self, query: str, top: int, scope_ids: frozenset[str]) -> list[Document]:
        from aizk_integrations.langchain._stores import searcher

        found = searcher(self._store, "scopes", None).search(query, top, scope_ids)
        self.calls.append(top)
        self.returned += len(found)
        return found


def test_the_store_is_asked_for_more_only_while_the_budget_has_room() -> None:
    """A retriever's first request knows nothing of what items cost: it starts at `k` pages."""
    reader = READERS[3]
    for budget, most_calls in ((20, 1), (BUDGET, 3), (2000, 7)):
        search = Counting(store_of("qdrant"))
        retriever = AizkEvidenceRetriever(
            base_retriever=AizkScopedRetriever(
                vectorstore=store_of("qdrant"), search_kwargs={"k": 4}, search=search
            ),
            compressor=AizkEvidenceCompressor(budget=budget),
        )
        [block] = retriever.invoke("garden budget", config=as_reader(reader))
        kept = block.metadata["aizk_counts"]["kept"]
        assert len(search.calls) <= most_calls
        assert search.calls == [4 * 2**page for page in range(len(search.calls))]
        distinct = search.calls[-1]
        assert distinct <= 2 * (kept + 1) or search.returned < distinct  # or the store ran out


def test_once_items_have_been_kept_most_requests_cost_one_store_call() -> None:
    search = Counting(store_of("qdrant"))
    retriever = AizkEvidenceRetriever(
        base_retriever=AizkScopedRetriever(
            vectorstore=store_of("qdrant"), search_kwargs={"k": 4}, search=search
        ),
        compressor=AizkEvidenceCompressor(budget=BUDGET),
    )
    calls, fetched, needed = [], 0, 0
    for number, reader in enumerate(READERS):
        search.calls = []
        [block] = retriever.invoke(questions(1, seed=number)[0], config=as_reader(reader))
        if number:  # the first request learnt what an item costs
            calls.append(len(search.calls))
            fetched += search.calls[-1]
            needed += block.metadata["aizk_counts"]["kept"] + 1
    assert sum(calls) / len(calls) <= 1.3
    assert fetched <= 1.5 * needed


def test_a_reader_whose_notes_are_rare_still_gets_a_full_budget(kind: str) -> None:
    rare = Note(id="rare", text="garden budget harbor the one rare note", scopes=("rare-reader",))
    documents = as_documents([*NOTES, rare])
    store = STORES[kind](documents, f"{kind}-with-rare")
    reader = ScopeDirectory.for_caller("rare-reader", {})
    retriever = AizkEvidenceRetriever(
        base_retriever=AizkScopedRetriever(vectorstore=store, search_kwargs={"k": 4}),
        compressor=AizkEvidenceCompressor(budget=BUDGET),
    )
    [block] = retriever.invoke("piano chess", config={"configurable": {"aizk_reader": reader}})
    assert "the one rare note" in block.page_content  # ranked far below 4 in the shared store


# Failing closed, and one reader for both the store and the packer


def test_with_no_reader_nothing_is_retrieved_and_a_warning_says_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        assert AizkScopedRetriever(vectorstore=store_of("in-memory")).invoke("garden") == []
    assert "scoped retrieval has no reader for this request" in caplog.text


def test_the_compressors_own_reader_reaches_the_store_query() -> None:
    reader = READERS[5]
    packer = AizkEvidenceCompressor(budget=BUDGET, reader=directory_of(reader))
    scoped = AizkScopedRetriever(vectorstore=store_of("in-memory"), search_kwargs={"k": 4})
    [block] = AizkEvidenceRetriever(base_retriever=scoped, compressor=packer).invoke("garden")
    assert block.metadata["aizk_counts"]["kept"] > 4
    assert leaked(block.page_content, reader) == set()


class RecordingRetriever(BaseRetriever):
    """A reader-aware retriever of an app's own: it reads the reader its request names."""

    seen: list[ScopeDirectory | None] = Field(default_factory=list)

    def invoke(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        self.seen.append(((config or {}).get("configurable") or {}).get("aizk_reader"))
        return super().invoke(input, config, **kwargs)

    def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
        return [Document("mine", metadata=scope_metadata(["user-05"]))]


def test_a_reader_aware_base_retriever_sees_the_reader_the_packer_packs_for() -> None:
    base = RecordingRetriever()
    sam = directory_of("user-05")
    packer = AizkEvidenceCompressor(reader=sam)
    AizkEvidenceRetriever(base_retriever=base, compressor=packer).invoke("q")
    AizkEvidenceRetriever(base_retriever=base).invoke("q", config=as_reader("user-05"))
    assert base.seen == [sam, sam]


def test_a_configurable_base_retriever_is_taken_and_configured_per_request() -> None:
    base = (
        store_of("in-memory")
        .as_retriever(search_kwargs={"k": 2})
        .configurable_fields(search_kwargs=ConfigurableField(id="search_kwargs"))
    )
    retriever = AizkEvidenceRetriever(
        base_retriever=base, compressor=AizkEvidenceCompressor(return_documents=True)
    )
    config = as_reader("user-01")
    config["configurable"]["search_kwargs"] = {"k": 200}
    kept = retriever.invoke("garden", config=config)
    assert 2 < len(kept) <= 200
    assert leaked(" ".join(texts(kept)), "user-01") == set()


def test_an_ensemble_of_scoped_retrievers_keeps_each_readers_own_copy_of_a_shared_text() -> None:
    twin = "The meeting moved to five."
    store = in_memory(
        as_documents(
            [
                Note(id="a", text=twin, scopes=("user-00",)),
                Note(id="b", text=twin, scopes=("user-01",)),
            ]
        ),
        "twins",
    )
    ensemble = EnsembleRetriever(
        retrievers=[AizkScopedRetriever(vectorstore=store), AizkScopedRetriever(vectorstore=store)],
        weights=[0.5, 0.5],
    )
    for reader in ("user-00", "user-01"):
        [block] = AizkEvidenceRetriever(base_retriever=ensemble).invoke(
            "meeting", as_reader(reader)
        )
        assert twin in block.page_content


def test_any_other_store_plugs_in_its_own_filter_and_keeps_paging_and_the_exact_check() -> None:
    store = store_of("in-memory")

    def any_scope(query: str, top: int, scope_ids: frozenset[str]) -> list[Document]:
        # As a dict-filter store would: at least one scope is the reader's (necessary only).
        return store.similarity_search(
            query, k=top, filter=lambda doc: bool(set(doc.metadata["scopes"]) & scope_ids)
        )

    reader = READERS[7]
    scoped = AizkScopedRetriever(vectorstore=store, search_kwargs={"k": 4}, search=any_scope)
    exact = AizkScopedRetriever(vectorstore=store, search_kwargs={"k": 4})
    for question in questions(5):
        got = scoped.invoke(question, config=as_reader(reader))
        assert texts(got) == texts(exact.invoke(question, config=as_reader(reader)))


# Ingestion you cannot get wrong


def test_scopes_written_by_scope_metadata_survive_every_stores_round_trip(kind: str) -> None:
    [document] = store_of(kind).similarity_search(NOTES[0].text, k=1)
    assert document.metadata["scopes"] == sorted(NOTES[0].scopes)


def test_scopes_flattened_into_one_string_are_refused_with_the_way_out() -> None:
    flattened = Document("Sam's note.", metadata={"scopes": "user-00,org-0"})
    packer = AizkEvidenceCompressor(reader=directory_of("user-00"))
    assert packer.compress_documents([flattened], "q") == []  # whose it is cannot be told
    with pytest.raises(ValueError, match="looks like several ids encoded in one string"):
        scope_metadata("user-00,org-0")


def test_a_list_dropped_by_filter_complex_metadata_is_withheld_and_the_advice_never_widens(
    caplog: pytest.LogCaptureFixture,
) -> None:
    [dropped] = filter_complex_metadata([Document("Sam's note.", metadata=scope_metadata(["x"]))])
    assert "scopes" not in dropped.metadata  # what the tutorials' helper does to a list
    with caplog.at_level(logging.WARNING):
        packer = AizkEvidenceCompressor(reader=directory_of("user-00"))
        assert packer.compress_documents([dropped], "q") == []
    assert "1 item with no scope under the metadata key 'scopes'" in caplog.text
    # The fix named for a multi-reader store is to write the scopes back, never to widen: the
    # warning names allow_unscoped only as the declaration of a corpus public as a whole.
    assert "If it serves many readers, write each item's scopes when it is stored" in caplog.text
    assert "allow_unscoped=True." in caplog.text
    assert "If the corpus is public as a whole" in caplog.text
    assert "allow_scoped_without_reader" not in caplog.text


@pytest.mark.parametrize("scopes", [[], (), ""], ids=["empty list", "empty tuple", "empty str"])
def test_scope_metadata_refuses_an_item_in_no_scope(scopes: object) -> None:
    with pytest.raises((ValueError, TypeError), match="scope"):
        scope_metadata(scopes)
