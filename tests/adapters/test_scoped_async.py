"""Async scoped retrieval is the sync path run once: per request one walk over the store's pages
and at most one packing, the store asked through its async API for exactly the pages the sync
path asks of its sync API, and the same answer, counts, logs and callbacks or events.

Each request is made twice, sync and async, on retrievers built alike (a retriever learns its
first page from the requests it served, so each path gets one of its own), over a shared store
where the reader's notes are rare enough to take several pages: in-memory (filtered exactly, so
the packer's walk pages) and FAISS (unfiltered, so every walk pages) in each framework, with a
`max_fetch` that cuts the paging short (and warns) as well as one that does not.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache, wraps
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from llama_index.core.schema import NodeWithScore

import aizk_integrations.langchain._compressor as langchain_compressor
import aizk_integrations.langchain._scoped as langchain_scoped
import aizk_integrations.llama_index._scoped as llama_index_scoped
from aizk_integrations.langchain import (
    AizkEvidenceCompressor,
    AizkEvidenceRetriever,
    AizkScopedRetriever,
)
from aizk_integrations.llama_index import AizkEvidencePostprocessor
from aizk_integrations.llama_index import AizkScopedRetriever as LlamaIndexScopedRetriever
from tests.adapters.recorders import packed_events
from tests.adapters.stores import Item, build
from tests.scoped_corpus import directory_of, notes, questions

READER = directory_of("user-07")
QUESTION = questions()[0]
BUDGET = 120
"""About a dozen notes: more than a first page of four, so the packer's walk pages too."""
TOP = 5
KINDS = ("langchain-in-memory", "langchain-faiss", "llama-index-simple", "llama-index-faiss")


@cache
def store(kind: str) -> Any:  # Any: the framework's store or index inside is what is asked
    """The shared store of `kind`, built once: `.store`, a LangChain store, or `.index`."""
    return build(kind, [Item(note.text, note.metadata) for note in notes()])


@dataclass
class Request:
    """What one request did, as its caller, its logs and its observers saw it, and what it cost."""

    answer: list[tuple[str, Any]]
    logs: list[tuple[str, int, str]]
    observed: list[Any]
    """LangChain's callbacks (each run's kind, name and outputs), or LlamaIndex's events."""
    walks: int = 0
    """How many times a walk over the store's pages started (`readable_pages`)."""
    packings: int = 0
    """How many times the packer ran (`run`)."""
    pages: list[tuple[str, int]] = field(default_factory=list)
    """Each call of the store's own API: sync or async, and the page size asked for."""


class Costs:
    """What the requests made inside `counting` cost: walks, packings and store calls."""

    def __init__(self) -> None:
        self.walks = 0
        self.packings = 0
        self.pages: list[tuple[str, int]] = []

    def counted(self, request: Request) -> Request:
        """`request` with the costs counted since the last one; the next counts from nothing."""
        request.walks, request.packings, request.pages = self.walks, self.packings, self.pages
        self.walks, self.packings, self.pages = 0, 0, []
        return request


def started(function: Callable[..., Any], costs: Costs, counter: str) -> Callable[..., Any]:
    """`function`, each call counted in `costs`'s `counter`."""

    @wraps(function)
    def counted(*args: Any, **kwargs: Any) -> Any:
        setattr(costs, counter, getattr(costs, counter) + 1)
        return function(*args, **kwargs)

    return counted


@pytest.fixture
def costs(monkeypatch: pytest.MonkeyPatch) -> Costs:
    """Every walk, packing and store call of the stores of `KINDS`, counted."""
    costs = Costs()
    for module in (langchain_scoped, llama_index_scoped):
        pager = started(module.readable_pages, costs, "walks")
        monkeypatch.setattr(module, "readable_pages", pager)
    for module in (langchain_compressor, llama_index_scoped):  # where each adapter packs
        monkeypatch.setattr(module, "run", started(module.run, costs, "packings"))
    for kind in KINDS:
        built = store(kind)
        if kind.startswith("langchain"):
            vectorstore = built.store
            for name, tag in (("similarity_search", "sync"), ("asimilarity_search", "async")):
                method = getattr(vectorstore, name)
                monkeypatch.setattr(vectorstore, name, asked(method, costs, tag, _k))
        else:
            cls = type(built.index.vector_store)
            for name, tag in (("query", "sync"), ("aquery", "async")):
                monkeypatch.setattr(cls, name, asked(getattr(cls, name), costs, tag, _top_k))
    return costs


def asked(
    method: Callable[..., Any], costs: Costs, tag: str, size: Callable[..., int]
) -> Callable[..., Any]:
    """`method`, each call noted with its page size."""
    if asyncio.iscoroutinefunction(method):

        @wraps(method)
        async def acounted(*args: Any, **kwargs: Any) -> Any:
            costs.pages.append((tag, size(*args, **kwargs)))
            return await method(*args, **kwargs)

        return acounted

    @wraps(method)
    def counted(*args: Any, **kwargs: Any) -> Any:
        costs.pages.append((tag, size(*args, **kwargs)))
        return method(*args, **kwargs)

    return counted


def _k(query: str, k: int, **kwargs: Any) -> int:
    return k


def _top_k(self: Any, query: Any, **kwargs: Any) -> int:
    top: int = query.similarity_top_k
    return top


class Runs(BaseCallbackHandler):
    """LangChain's callbacks, each run's kind, name and outputs (never its ids)."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def on_retriever_start(self, serialized: Any, query: str, **kwargs: Any) -> None:
        self.seen.append(("retriever start", kwargs.get("name"), query))

    def on_retriever_end(self, documents: Any, **kwargs: Any) -> None:
        self.seen.append(("retriever end", [document.page_content for document in documents]))

    def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
        self.seen.append(("chain start", kwargs.get("name"), inputs))

    def on_chain_end(self, outputs: Any, **kwargs: Any) -> None:
        self.seen.append(("chain end", outputs))


def langchain_request(
    kind: str, packed: bool, max_fetch: int, asynchronous: bool, caplog: pytest.LogCaptureFixture
) -> Request:
    vectorstore = store(kind).store
    retriever: BaseRetriever = AizkScopedRetriever(
        vectorstore=vectorstore, search_kwargs={"k": TOP}, max_fetch=max_fetch
    )
    if packed:
        compressor = AizkEvidenceCompressor(budget=BUDGET, return_documents=True)
        retriever = AizkEvidenceRetriever(base_retriever=retriever, compressor=compressor)
    runs = Runs()
    config: RunnableConfig = {"configurable": {"aizk_reader": READER}, "callbacks": [runs]}
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="aizk_integrations"):
        if asynchronous:
            found = asyncio.run(retriever.ainvoke(QUESTION, config))
        else:
            found = retriever.invoke(QUESTION, config)
    return Request(_documents(found), _logs(caplog), runs.seen)


def llama_index_request(
    kind: str, packed: bool, max_fetch: int, asynchronous: bool, caplog: pytest.LogCaptureFixture
) -> Request:
    index = store(kind).index
    evidence = AizkEvidencePostprocessor(budget=BUDGET, return_nodes=True) if packed else None
    retriever = LlamaIndexScopedRetriever(
        index, similarity_top_k=TOP, max_fetch=max_fetch, evidence=evidence
    ).for_reader(READER)
    caplog.clear()
    with packed_events() as events, caplog.at_level(logging.DEBUG, logger="aizk_integrations"):
        if asynchronous:
            found = asyncio.run(retriever.aretrieve(QUESTION))
        else:
            found = retriever.retrieve(QUESTION)
    return Request(_nodes(found), _logs(caplog), [event.counts for event in events.events])


def _documents(found: list[Document]) -> list[tuple[str, Any]]:
    return [(document.page_content, document.metadata) for document in found]


def _nodes(found: list[NodeWithScore]) -> list[tuple[str, Any]]:
    return [(scored.node.get_content(), (scored.score, scored.node.metadata)) for scored in found]


def _logs(caplog: pytest.LogCaptureFixture) -> list[tuple[str, int, str]]:
    return [
        (record.name, record.levelno, record.getMessage())
        for record in caplog.records
        if record.name.startswith("aizk_integrations")
    ]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("packed", [False, True], ids=["top-k", "packed"])
@pytest.mark.parametrize("max_fetch", [1024, 12], ids=["uncut", "cut-by-max-fetch"])
def test_an_async_request_walks_once_asking_for_the_pages_the_sync_request_asks_for(
    kind: str, packed: bool, max_fetch: int, costs: Costs, caplog: pytest.LogCaptureFixture
) -> None:
    request = langchain_request if kind.startswith("langchain") else llama_index_request
    sync = costs.counted(request(kind, packed, max_fetch, False, caplog))
    async_ = costs.counted(request(kind, packed, max_fetch, True, caplog))

    assert (sync.walks, sync.packings) == (1, 1 if packed else 0)
    assert (async_.walks, async_.packings) == (sync.walks, sync.packings)
    assert {tag for tag, _ in sync.pages} == {"sync"}
    # LlamaIndex's in-process stores answer `aquery` with their `query`: only `aquery` counts.
    assert [size for tag, size in async_.pages if tag == "async"] == [
        size for _, size in sync.pages
    ]
    assert (async_.answer, async_.logs, async_.observed) == (sync.answer, sync.logs, sync.observed)
    assert sync.answer  # the reader has notes here: the comparison is not of two empty answers


@pytest.mark.parametrize("kind", ["langchain-in-memory", "llama-index-simple"])
def test_an_error_of_the_async_store_reaches_the_async_caller_as_it_was_raised(
    kind: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    failure = ConnectionError("the store is down")

    async def down(*args: Any, **kwargs: Any) -> Any:
        raise failure

    if kind.startswith("langchain"):
        monkeypatch.setattr(store(kind).store, "asimilarity_search", down)
    else:
        monkeypatch.setattr(type(store(kind).index.vector_store), "aquery", down)
    request = langchain_request if kind.startswith("langchain") else llama_index_request
    with pytest.raises(ConnectionError) as raised:
        request(kind, True, 1024, True, caplog)
    assert raised.value is failure
    assert (raised.value.__cause__, raised.value.__context__) == (None, None)
