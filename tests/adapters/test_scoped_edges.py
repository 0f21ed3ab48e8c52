"""Scoped retrieval at its edges, in both frameworks: scopes that cannot be read, a store that
answers with nothing or without scores, a rare reader on a store filtered in its query, and
counts set to nothing after construction."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from uuid import UUID

import pytest
from langchain_classic.retrievers import EnsembleRetriever
from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    BaseCallbackHandler,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_qdrant import QdrantVectorStore
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.llms import MockLLM
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.vector_stores import SimpleVectorStore
from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryResult
from pydantic import Field, ValidationError
from qdrant_client import QdrantClient
from qdrant_client.models import Distance, VectorParams

from aizk_integrations import Scope, ScopeDirectory, scope_metadata
from aizk_integrations import llama_index as aizk_llama_index
from aizk_integrations._stores.filters import CHROMA_MOST_VALUES, chroma_where, qdrant_filter
from aizk_integrations.langchain import AizkEvidenceRetriever, AizkScopedRetriever
from aizk_integrations.langchain._stores import searcher
from tests.adapters.stores import WordEmbeddings
from tests.adapters.word_embedding import WordEmbedding, word_vector
from tests.scoped_corpus import DIMENSIONS

ANA_AND_BOB = ScopeDirectory(scopes={"ana": Scope(name="ana"), "bob": Scope(name="bob")})
"""A reader of every id an encoded list "ana,bob" could be taken to name."""
SAM = ScopeDirectory.for_caller("sam", {})


def as_reader(reader: ScopeDirectory) -> RunnableConfig:
    return {"configurable": {"aizk_reader": reader}}


def langchain_store(documents: list[Document]) -> InMemoryVectorStore:
    store = InMemoryVectorStore(WordEmbeddings())
    store.add_documents(documents)
    return store


def test_an_encoded_list_of_scopes_reaches_no_reader_of_langchain_scoped_retrieval() -> None:
    store = langchain_store(
        [
            Document("garden gate code", id="encoded", metadata={"scopes": "ana,bob"}),
            Document("garden gate hinge", id="listed", metadata={"scopes": ["ana", "bob"]}),
        ]
    )
    retriever = AizkScopedRetriever(vectorstore=store, search_kwargs={"k": 4})
    for reader in (ANA_AND_BOB, SAM):
        found = retriever.invoke("garden gate", as_reader(reader))
        assert "encoded" not in [document.id for document in found]
        found = asyncio.run(retriever.ainvoke("garden gate", as_reader(reader)))
        assert "encoded" not in [document.id for document in found]
    assert [d.id for d in retriever.invoke("garden gate", as_reader(ANA_AND_BOB))] == ["listed"]
    assert retriever.invoke("garden gate", as_reader(SAM)) == []


def test_a_rare_reader_on_an_in_memory_store_is_found_with_a_page_of_one() -> None:
    # The store is filtered in its query, so the one readable document among many is the
    # first page's answer; paged unfiltered, 8 documents would never reach it.
    others = [
        Document(f"garden note {index}", id=f"ana-{index}", metadata={"scopes": ["ana"]})
        for index in range(200)
    ]
    mine = Document("a far away reply", id="sam-0", metadata={"scopes": ["sam"]})
    retriever = AizkScopedRetriever(
        vectorstore=langchain_store([*others, mine]), search_kwargs={"k": 1}, max_fetch=8
    )
    assert [d.id for d in retriever.invoke("garden note", as_reader(SAM))] == ["sam-0"]
    packed = AizkEvidenceRetriever(base_retriever=retriever).invoke("garden note", as_reader(SAM))
    [block] = packed
    assert "a far away reply" in block.page_content
    assert block.metadata["aizk_counts"]["kept"] == 1


def test_k_set_to_nothing_after_construction_is_refused_naming_it() -> None:
    retriever = AizkScopedRetriever(vectorstore=langchain_store([]))
    with pytest.raises(ValidationError, match=r"search_kwargs\['k'\] must be an int of at least 1"):
        retriever.search_kwargs = {"k": 0}
    with pytest.raises(ValidationError, match="max_fetch"):
        retriever.max_fetch = 0
    assert (retriever.k, retriever.max_fetch) == (4, 1024)


def test_search_kwargs_set_the_documents_returned_as_langchains_retrievers_do() -> None:
    notes = [Document(f"note {n}", metadata=scope_metadata("sam")) for n in range(6)]
    retriever = AizkScopedRetriever(vectorstore=langchain_store(notes), search_kwargs={"k": 2})
    assert len(retriever.invoke("note", as_reader(SAM))) == 2
    assert (
        len(AizkScopedRetriever(vectorstore=langchain_store(notes)).invoke("note", as_reader(SAM)))
        == 4
    )


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"bogus": 1}, "bogus"),
        ({"k": 2}, "k"),
        ({"search_kwargs": {"filter": {"a": 1}}}, "'filter'"),
        ({"search_kwargs": {"k": 0}}, r"search_kwargs\['k'\]"),
        ({"search_type": "mmr"}, "search_type"),
    ],
)
def test_a_setting_it_does_not_take_is_refused_by_name(
    settings: dict[str, Any], named: str
) -> None:
    with pytest.raises(ValidationError, match=named):
        AizkScopedRetriever(vectorstore=langchain_store([]), **settings)


@pytest.mark.parametrize("k", [0, -1, True, 2.0])
def test_a_calls_own_k_of_nothing_is_refused_naming_it(k: Any) -> None:
    retriever = AizkScopedRetriever(vectorstore=langchain_store([]))
    with pytest.raises(ValueError, match=r"k must be an int of at least 1 .*, not"):
        retriever.invoke("garden", as_reader(SAM), k=k)
    with pytest.raises(ValueError, match=r"k must be an int of at least 1 .*, not"):
        asyncio.run(retriever.ainvoke("garden", as_reader(SAM), k=k))


# LlamaIndex: what a store hands back


class Answering(SimpleVectorStore):
    """A store whose every query is answered with `answer` (set per test), recording the
    keywords each query was given."""

    answer: VectorStoreQueryResult = VectorStoreQueryResult(nodes=[], similarities=[], ids=[])
    asked: list[dict[str, Any]] = Field(default_factory=list)

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        self.asked.append(kwargs)
        return self.answer

    async def aquery(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        return self.query(query, **kwargs)


def node(text: str, scopes: list[str]) -> TextNode:
    return TextNode(id_=text, text=text, metadata={"scopes": scopes}, embedding=word_vector(text))


def answered_by(
    answer: VectorStoreQueryResult,
    narrowing: aizk_llama_index.ScopeFilter | None = None,
    store: Answering | None = None,
) -> aizk_llama_index.AizkScopedRetriever:
    store = Answering() if store is None else store
    store.answer = answer
    index = VectorStoreIndex(
        [],
        storage_context=StorageContext.from_defaults(vector_store=store),
        embed_model=WordEmbedding(),
    )
    chosen = aizk_llama_index.ScopeFilter() if narrowing is None else narrowing
    return aizk_llama_index.AizkScopedRetriever(index, scoped_query=lambda ids: chosen)


def retrieved(retriever: aizk_llama_index.AizkScopedRetriever) -> list[list[NodeWithScore]]:
    bound = retriever.for_reader(SAM)
    return [bound.retrieve("garden"), asyncio.run(bound.aretrieve("garden"))]


@pytest.mark.parametrize(
    "answer",
    [
        VectorStoreQueryResult(nodes=[], similarities=[], ids=[]),
        VectorStoreQueryResult(nodes=[], similarities=None, ids=None),
        VectorStoreQueryResult(nodes=None, similarities=None, ids=None),
        VectorStoreQueryResult(nodes=None, similarities=None, ids=[]),
    ],
    ids=["no nodes", "no nodes, no similarities", "nothing at all", "no ids"],
)
def test_a_store_answering_with_nothing_gives_nothing(answer: VectorStoreQueryResult) -> None:
    assert retrieved(answered_by(answer)) == [[], []]


def test_nodes_without_similarities_come_back_unscored_and_still_checked() -> None:
    answer = VectorStoreQueryResult(
        nodes=[node("garden one", ["sam"]), node("garden two", ["ana"])], similarities=None
    )
    for found in retrieved(answered_by(answer)):
        assert [(scored.node.node_id, scored.score) for scored in found] == [("garden one", None)]


# No reader, or a reader of nothing, on every path of the LangChain scoped retriever


@pytest.mark.parametrize("path", ["invoke", "ainvoke", "packed", "apacked"])
def test_a_request_with_no_reader_gets_nothing_and_is_told_how_to_name_one(
    path: str, caplog: pytest.LogCaptureFixture
) -> None:
    store = langchain_store([Document("garden gate", metadata={"scopes": ["sam"]})])
    scoped = AizkScopedRetriever(vectorstore=store)
    retriever = (
        scoped if path in ("invoke", "ainvoke") else AizkEvidenceRetriever(base_retriever=scoped)
    )
    with caplog.at_level(logging.WARNING, logger="aizk_integrations"):
        if path.startswith("a"):
            found = asyncio.run(retriever.ainvoke("garden gate", {}))
        else:
            found = retriever.invoke("garden gate", {})
    assert found == []
    assert (
        "scoped retrieval has no reader for this request, so it retrieves nothing; pass this "
        "request's reader as config={'configurable': {'aizk_reader': reader}}"
    ) in caplog.text


@pytest.mark.parametrize("path", ["packed", "apacked"])
def test_a_reader_of_no_scopes_gets_no_block_on_either_path(path: str) -> None:
    store = langchain_store([Document("garden gate", metadata={"scopes": ["sam"]})])
    retriever = AizkEvidenceRetriever(base_retriever=AizkScopedRetriever(vectorstore=store))
    nobody = as_reader(ScopeDirectory(scopes={}))
    if path == "apacked":
        assert asyncio.run(retriever.ainvoke("garden gate", nobody)) == []
    else:
        assert retriever.invoke("garden gate", nobody) == []


class Logging(Answering):
    """A store that logs at DEBUG what it found, as Chroma's does, and warns of a problem."""

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        logging.getLogger(__name__).debug("found: Ana's gate code is 4417")
        logging.getLogger(__name__).warning("the index is being rebuilt")
        return self.answer


def test_the_store_is_given_the_scoped_querys_keywords_on_either_path() -> None:
    where = {"scopes": {"$in": ["sam"]}}
    store = Answering()
    retriever = answered_by(
        VectorStoreQueryResult(nodes=[], similarities=[], ids=[]),
        aizk_llama_index.ScopeFilter(store_kwargs={"where": where}),
        store,
    )
    assert retrieved(retriever) == [[], []]
    assert store.asked == [{"where": where}, {"where": where}]


def test_a_stores_own_debug_lines_are_dropped_during_the_scoped_query_alone(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = Logging()
    index = VectorStoreIndex(
        [],
        storage_context=StorageContext.from_defaults(vector_store=store),
        embed_model=WordEmbedding(),
    )
    retriever = aizk_llama_index.AizkScopedRetriever(
        index, scoped_query=lambda ids: aizk_llama_index.ScopeFilter()
    ).for_reader(SAM)
    logging.getLogger(__name__).filters.clear()  # as in a process that never ran a sync query
    with caplog.at_level(logging.DEBUG, logger=__name__):
        asyncio.run(retriever.aretrieve("garden"))
        retriever.retrieve("garden")
        assert [record.getMessage() for record in caplog.records if record.name == __name__] == [
            "the index is being rebuilt",
            "the index is being rebuilt",
        ]
        caplog.clear()
        store.query(VectorStoreQuery(query_embedding=word_vector("garden")))  # not scoped
        assert [record.getMessage() for record in caplog.records if record.name == __name__] == [
            "found: Ana's gate code is 4417",
            "the index is being rebuilt",
        ]


# The async paths ask the store through its async API, filtered as the sync paths are


class Recording(InMemoryVectorStore):
    """An in-memory store that records which API each search came through."""

    def __init__(self) -> None:
        super().__init__(WordEmbeddings())
        self.calls: list[str] = []
        self.ks: list[int] = []

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        self.calls.append("sync")
        self.ks.append(k)
        return super().similarity_search(query, k, **kwargs)

    async def asimilarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        self.calls.append("async")
        self.ks.append(k)
        return InMemoryVectorStore.similarity_search(self, query, k, **kwargs)


def rare_reader_store() -> Recording:
    store = Recording()
    store.add_documents(
        [
            Document(f"garden note {index}", id=f"ana-{index}", metadata={"scopes": ["ana"]})
            for index in range(200)
        ]
        + [Document("a far away reply", id="sam-0", metadata={"scopes": ["sam"]})]
    )
    return store


def test_the_async_scoped_retriever_asks_the_async_api_with_the_readers_filter() -> None:
    store = rare_reader_store()
    retriever = AizkScopedRetriever(vectorstore=store, search_kwargs={"k": 1}, max_fetch=8)
    found = asyncio.run(retriever.ainvoke("garden note", as_reader(SAM)))
    assert [document.id for document in found] == ["sam-0"]
    assert store.calls == ["async"]


def test_the_async_packed_retrieval_asks_the_async_api_with_the_readers_filter() -> None:
    store = rare_reader_store()
    scoped = AizkScopedRetriever(vectorstore=store, search_kwargs={"k": 1}, max_fetch=8)
    [block] = asyncio.run(
        AizkEvidenceRetriever(base_retriever=scoped).ainvoke("garden note", as_reader(SAM))
    )
    assert "a far away reply" in block.page_content
    assert block.metadata["aizk_counts"]["kept"] == 1
    # A first request pages from k: a full page of 1, then a short page of 2, as the sync path.
    assert store.calls == ["async", "async"]
    sync = rare_reader_store()
    AizkEvidenceRetriever(
        base_retriever=AizkScopedRetriever(vectorstore=sync, search_kwargs={"k": 1}, max_fetch=8)
    ).invoke("garden note", as_reader(SAM))
    assert sync.calls == ["sync", "sync"]


def test_an_async_packed_retrieval_of_any_retriever_passes_the_request_on() -> None:
    # Around an ensemble (which calls its retrievers with callbacks alone), the request's
    # reader still reaches the scoped retriever inside, on the async path too.
    scoped = AizkScopedRetriever(
        vectorstore=rare_reader_store(), search_kwargs={"k": 1}, max_fetch=8
    )
    ensemble = EnsembleRetriever(retrievers=[scoped, scoped], weights=[0.5, 0.5])
    [block] = asyncio.run(
        AizkEvidenceRetriever(base_retriever=ensemble).ainvoke("garden note", as_reader(SAM))
    )
    assert "a far away reply" in block.page_content


# LlamaIndex: the async path answers as the sync path does, whatever the call asks


SAMS_NOTES = [
    TextNode(
        id_=f"sam-{index}",
        text=f"garden note {index} " + "reranker sweep " * (index % 7),
        metadata={"scopes": ["sam"]},
        embedding=word_vector(f"garden note {index} " + "reranker sweep " * (index % 7)),
    )
    for index in range(60)
]


def simple_index() -> VectorStoreIndex:
    return VectorStoreIndex([node.model_copy() for node in SAMS_NOTES], embed_model=WordEmbedding())


def both_paths(retriever: aizk_llama_index.AizkScopedRetriever, query: QueryBundle) -> list[Any]:
    """The sync and the async answer, each node as its id, score, text and counts."""
    bound = retriever.for_reader(SAM)
    answers = [bound.retrieve(query), asyncio.run(bound.aretrieve(query))]
    return [
        [
            (node.node_id, scored.score, node.get_content(), node.metadata.get("aizk_counts"))
            for scored in answer
            for node in [scored.node]
        ]
        for answer in answers
    ]


def test_async_follows_the_embedding_a_query_brings_as_sync_does() -> None:
    retriever = aizk_llama_index.AizkScopedRetriever(simple_index(), similarity_top_k=3)
    # The text says one thing and the embedding another: the embedding is what is searched.
    query = QueryBundle(
        "garden note 1", embedding=word_vector("garden note 13 " + "reranker sweep " * 6)
    )
    sync, async_ = both_paths(retriever, query)
    assert sync == async_
    assert sync[0][0] == "sam-13"


def test_async_packs_to_the_budget_as_sync_does() -> None:
    evidence = aizk_llama_index.AizkEvidencePostprocessor(budget=200)
    retriever = aizk_llama_index.AizkScopedRetriever(simple_index(), evidence=evidence)
    sync, async_ = both_paths(retriever, QueryBundle("garden note reranker"))
    assert sync == async_
    [(_, _, block, _)] = sync
    assert "garden note" in block


def test_async_fits_the_block_to_the_room_the_query_leaves_as_sync_does() -> None:
    evidence = aizk_llama_index.AizkEvidencePostprocessor(
        budget=4096, max_budget=4096, budget_covers="block", fit_to=MockLLM(max_tokens=64)
    )
    retriever = aizk_llama_index.AizkScopedRetriever(simple_index(), evidence=evidence)
    budgets = []
    for question in ("garden note reranker", "garden note reranker " * 300):
        sync, async_ = both_paths(retriever, QueryBundle(question))
        assert sync == async_
        node = retriever.for_reader(SAM).retrieve(QueryBundle(question))[0].node
        budgets.append(node.metadata["aizk_counts"]["budget"])
    short, long = budgets
    assert long < short < 4096  # the window binds, and a long question leaves less room


def test_a_rare_reader_on_a_simple_vector_store_is_found_with_a_page_of_one() -> None:
    # The store is asked for the readable nodes alone (node_ids), so the one readable node
    # among many is the first page's answer; paged unfiltered, 8 nodes would never reach it.
    others = [
        TextNode(
            id_=f"ana-{index}",
            text=f"garden note {index}",
            metadata={"scopes": ["ana"]},
            embedding=word_vector(f"garden note {index}"),
        )
        for index in range(200)
    ]
    mine = TextNode(
        id_="sam-0",
        text="a far away reply",
        metadata={"scopes": ["sam"]},
        embedding=word_vector("a far away reply"),
    )
    index = VectorStoreIndex([*others, mine], embed_model=WordEmbedding())
    retriever = aizk_llama_index.AizkScopedRetriever(index, similarity_top_k=1, max_fetch=8)
    for found in retrieved(retriever):
        assert [scored.node.node_id for scored in found] == ["sam-0"]


def test_a_simple_vector_store_kept_without_metadata_is_paged_and_still_checked() -> None:
    # A store persisted by an older LlamaIndex keeps vectors alone: nothing to narrow by, so
    # it is paged and every node is checked against the docstore's metadata.
    index = VectorStoreIndex(
        [node.model_copy() for node in SAMS_NOTES[:5]], embed_model=WordEmbedding()
    )
    index.vector_store.data.metadata_dict.clear()  # type: ignore[attr-defined]
    retriever = aizk_llama_index.AizkScopedRetriever(index, similarity_top_k=5)
    for found in retrieved(retriever):
        assert sorted(scored.node.node_id for scored in found) == [f"sam-{n}" for n in range(5)]
    assert retriever.for_reader(ANA_AND_BOB).retrieve("garden") == []


def test_qdrant_in_local_mode_is_paged_past_what_its_filter_answers_well() -> None:
    client = QdrantClient(":memory:")
    client.create_collection(
        "edges", vectors_config=VectorParams(size=DIMENSIONS, distance=Distance.COSINE)
    )
    store = QdrantVectorStore(client=client, collection_name="edges", embedding=WordEmbeddings())
    search = searcher(store, "scopes", None)
    few = frozenset(f"group-{n}" for n in range(10))
    many = frozenset(f"group-{n}" for n in range(100))
    assert search.filter_for(few) is not None  # type: ignore[attr-defined]
    assert search.filter_for(many) is None  # type: ignore[attr-defined]


class Handing(BaseRetriever):
    """Any retriever of the app's own: the reader's note, and the keywords of every call."""

    called_with: list[dict[str, Any]] = Field(default_factory=list)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        self.called_with.append(kwargs)
        return [Document("garden gate", metadata={"scopes": ["sam"]})]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        return self._get_relevant_documents(query, run_manager=run_manager, **kwargs)  # type: ignore[arg-type]


class Runs(BaseCallbackHandler):
    """Each retriever run started: its name and its parent's id."""

    def __init__(self) -> None:
        self.started: list[tuple[str, UUID | None]] = []
        self.ids: dict[UUID, str] = {}

    def on_retriever_start(
        self,
        serialized: dict[str, Any],
        query: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        name = kwargs.get("name") or serialized.get("name", "")
        self.ids[run_id] = name
        self.started.append((name, parent_run_id))


@pytest.mark.parametrize("asynchronous", [False, True], ids=["invoke", "ainvoke"])
def test_any_base_retriever_runs_inside_the_packers_run_with_the_calls_keywords(
    asynchronous: bool,
) -> None:
    base, runs = Handing(), Runs()
    retriever = AizkEvidenceRetriever(base_retriever=base)
    config: RunnableConfig = {**as_reader(SAM), "callbacks": [runs]}
    if asynchronous:
        [block] = asyncio.run(retriever.ainvoke("garden", config, k=2))
    else:
        [block] = retriever.invoke("garden", config, k=2)
    assert "garden gate" in block.page_content
    assert base.called_with == [{"k": 2}]
    [(outer, no_parent), (inner, parent)] = runs.started
    assert (outer, no_parent, inner) == ("AizkEvidenceRetriever", None, "Handing")
    assert parent is not None
    assert runs.ids[parent] == "AizkEvidenceRetriever"


@pytest.mark.parametrize("asynchronous", [False, True], ids=["invoke", "ainvoke"])
def test_the_scoped_retriever_maps_a_server_authenticated_user_on_either_path(
    asynchronous: bool,
) -> None:
    store = langchain_store(
        [
            Document("garden gate", id="sam", metadata={"scopes": ["sam"]}),
            Document("garden hose", id="ana", metadata={"scopes": ["ana"]}),
        ]
    )
    readers = {"sam": SAM, "ana": ScopeDirectory.for_caller("ana", {})}
    retriever = AizkScopedRetriever(
        vectorstore=store, reader_of_user=lambda user: readers[user["identity"]]
    )
    config: RunnableConfig = {"configurable": {"langgraph_auth_user": {"identity": "ana"}}}
    if asynchronous:
        found = asyncio.run(retriever.ainvoke("garden", config))
    else:
        found = retriever.invoke("garden", config)
    assert [document.id for document in found] == ["ana"]


def test_evidence_that_would_pack_for_another_reader_or_key_is_refused_saying_so() -> None:
    index = simple_index()
    with pytest.raises(TypeError) as raised:
        aizk_llama_index.AizkScopedRetriever(index, evidence="pack")  # type: ignore[arg-type]
    assert raised.value.args == ("evidence must be an AizkEvidencePostprocessor, not str",)
    with pytest.raises(ValueError, match="reader of its own") as refused:
        aizk_llama_index.AizkScopedRetriever(
            index, evidence=aizk_llama_index.AizkEvidencePostprocessor(reader=SAM)
        )
    assert refused.value.args == (
        "evidence has a reader of its own; with scoped retrieval the reader is the "
        "retriever's: pass reader= to AizkScopedRetriever (or use its for_reader) and "
        "leave the postprocessor's reader unset",
    )


# How far the store is asked, packing: the first page sized to the budget, max_fetch said


def asked(store: Recording) -> list[tuple[str, int]]:
    return [(how, k) for how, k in zip(store.calls, store.ks, strict=True)]


def test_after_one_request_a_packing_request_is_one_store_call_sized_to_its_budget() -> None:
    store = rare_reader_store()
    store.add_documents(
        [
            Document(f"sam's garden note {n} " * 3, id=f"sam-{n}", metadata={"scopes": ["sam"]})
            for n in range(1, 80)
        ]
    )
    scoped = AizkScopedRetriever(vectorstore=store, search_kwargs={"k": 4})
    retriever = AizkEvidenceRetriever(base_retriever=scoped)
    retriever.invoke("garden note", as_reader(SAM))  # learns what a note costs
    store.calls.clear()
    store.ks.clear()
    retriever.invoke("garden note", as_reader(SAM))
    [(_, whole)] = asked(store)
    store.calls.clear()
    store.ks.clear()
    small: RunnableConfig = {"configurable": {**as_reader(SAM)["configurable"], "aizk_budget": 64}}
    [block] = asyncio.run(retriever.ainvoke("garden note", small))
    [(how, part)] = asked(store)
    assert how == "async"
    assert 4 < part < whole  # a request's own budget sizes its first page
    assert block.metadata["aizk_counts"]["budget"] == 64


@pytest.mark.parametrize("asynchronous", [False, True], ids=["invoke", "ainvoke"])
def test_a_packing_request_stopped_by_max_fetch_says_so_in_its_counts_and_a_warning(
    asynchronous: bool, caplog: pytest.LogCaptureFixture
) -> None:
    store = rare_reader_store()
    store.add_documents([Document("garden note", id="sam-1", metadata={"scopes": ["sam"]})])

    def unfiltered(query: str, top: int, scope_ids: frozenset[str]) -> list[Document]:
        return store.similarity_search(query, k=top)

    scoped = AizkScopedRetriever(vectorstore=store, search=unfiltered, max_fetch=8)
    retriever = AizkEvidenceRetriever(base_retriever=scoped)
    with caplog.at_level(logging.WARNING, logger="aizk_integrations"):
        if asynchronous:
            [block] = asyncio.run(retriever.ainvoke("garden note", as_reader(SAM)))
        else:
            [block] = retriever.invoke("garden note", as_reader(SAM))
    assert block.metadata["aizk_counts"]["kept"] == 1
    assert block.metadata["aizk_counts"]["max_fetch_reached"] is True
    assert "scoped retrieval stopped at max_fetch (8 documents asked of the store" in caplog.text


def test_evidence_reading_another_scopes_key_is_refused_naming_both() -> None:
    evidence = aizk_llama_index.AizkEvidencePostprocessor(scopes_key="groups")
    with pytest.raises(ValueError, match="scopes_key") as refused:
        aizk_llama_index.AizkScopedRetriever(simple_index(), evidence=evidence)
    assert refused.value.args == (
        "evidence reads scopes from 'groups' but the retriever filters on 'scopes'; give both "
        "the same scopes_key",
    )


ANA = ScopeDirectory.for_caller("ana", {})

ANAS_NOTES = [
    TextNode(
        id_=f"ana-{index}",
        text=f"garden note {index} ana",
        metadata={"scopes": ["ana"]},
        embedding=word_vector(f"garden note {index} ana"),
    )
    for index in range(8)
]


def ids(found: list[NodeWithScore]) -> set[str]:
    return {scored.node.node_id.split("-")[0] for scored in found}


def test_bound_retrievers_pulled_as_interleaved_streams_each_answer_for_their_own_reader() -> None:
    # A reader named by ambient state inside a generator would be set in whoever pulls it; a
    # reader bound with for_reader is part of the retriever, whoever pulls the stream and when.
    index = VectorStoreIndex(
        [node.model_copy() for node in [*SAMS_NOTES[:8], *ANAS_NOTES]],
        embed_model=WordEmbedding(),
    )
    retriever = aizk_llama_index.AizkScopedRetriever(index, similarity_top_k=3)

    def streaming(reader: ScopeDirectory) -> Iterator[set[str]]:
        bound = retriever.for_reader(reader)
        for _ in range(2):
            yield ids(bound.retrieve("garden note"))

    async def astreaming(reader: ScopeDirectory) -> AsyncIterator[set[str]]:
        bound = retriever.for_reader(reader)
        for _ in range(2):
            yield ids(await bound.aretrieve("garden note"))

    sams, anas = streaming(SAM), streaming(ANA)
    with ThreadPoolExecutor(max_workers=1) as pool:  # one thread pulls both, in turn
        pulled = [pool.submit(next, stream).result() for stream in (sams, anas, sams, anas)]
    assert pulled == [{"sam"}, {"ana"}, {"sam"}, {"ana"}]
    assert retriever.retrieve("garden note") == []  # and the shared one still has no reader

    async def interleaved() -> list[set[str]]:
        sams, anas = astreaming(SAM), astreaming(ANA)
        return [await anext(stream) for stream in (sams, anas, anas, sams)]

    assert asyncio.run(interleaved()) == [{"sam"}, {"ana"}, {"ana"}, {"sam"}]


@pytest.mark.parametrize("value", ["sam", None, {"sam": "private"}], ids=["str", "None", "dict"])
def test_for_reader_of_something_other_than_a_directory_is_refused_naming_it(
    value: object,
) -> None:
    evidence = aizk_llama_index.AizkEvidencePostprocessor()
    for handle in (
        evidence.for_reader,
        aizk_llama_index.AizkScopedRetriever(simple_index()).for_reader,
    ):
        with pytest.raises(TypeError) as refused:
            handle(value)  # type: ignore[arg-type]  # the point
        assert refused.value.args == (
            "for_reader needs a ScopeDirectory (a request may switch readers but not switch "
            f"authorization off), not {type(value).__name__}",
        )


@pytest.mark.parametrize(
    ("settings", "error", "message"),
    [
        ({"similarity_top_k": "4"}, TypeError, "similarity_top_k must be an int, not str"),
        ({"similarity_top_k": True}, TypeError, "similarity_top_k must be an int, not bool"),
        ({"similarity_top_k": 0}, ValueError, "similarity_top_k must be at least 1, got 0"),
        ({"max_fetch": 2.0}, TypeError, "max_fetch must be an int, not float"),
        (
            {"similarity_top_k": 8, "max_fetch": 7},
            ValueError,
            "max_fetch must be at least 8, got 7",
        ),
        (
            {"reader": "sam"},
            TypeError,
            "reader needs a ScopeDirectory (a request may switch readers but not switch "
            "authorization off), not str",
        ),
    ],
)
def test_llama_index_scoped_settings_are_refused_naming_what_is_wrong(
    settings: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as refused:
        aizk_llama_index.AizkScopedRetriever(simple_index(), **settings)
    assert refused.value.args == (message,)


def test_llama_index_scoped_settings_at_their_least_are_taken() -> None:
    retriever = aizk_llama_index.AizkScopedRetriever(
        simple_index(), similarity_top_k=1, max_fetch=1, reader=None
    )
    [found] = retriever.for_reader(SAM).retrieve("garden note 1")
    assert found.node.node_id.startswith("sam-")
    with pytest.raises(TypeError, match="for_reader needs a ScopeDirectory"):
        retriever.for_reader(None)  # type: ignore[arg-type]


@pytest.mark.parametrize(("most", "plan"), [(CHROMA_MOST_VALUES, "chroma"), (64, "qdrant local")])
def test_a_store_filter_names_up_to_the_most_values_its_store_answers_well(
    most: int, plan: str
) -> None:
    def planned(ids: frozenset[str]) -> object:
        if plan == "chroma":
            return chroma_where("scopes", ids)
        return qdrant_filter("scopes", ids, QdrantClient(":memory:"))

    groups = [f"group-{n:04d}" for n in range(most + 1)]
    assert planned(frozenset(groups[:most])) is not None
    assert planned(frozenset(groups)) is None  # then the store is paged unfiltered
    # A database id is asked for as text and as a number: two values for one id.
    numbers = [str(n) for n in range(most // 2 + 1)]
    assert planned(frozenset(numbers[:-1])) is not None
    assert planned(frozenset(numbers)) is None
