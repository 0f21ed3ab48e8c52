"""Real stores holding real mistakes: bad records, stripped scopes and other readers' items.

* A store of 10,000 items, 1% of them malformed, serves 20 readers through scoped retrieval
  with no failed call, and each reader is told exactly which of their own items were withheld
  as malformed (by id, position and what is wrong), never anything of another reader's.
* A pipeline step that strips list metadata (`filter_complex_metadata`) over a corpus mixing a
  public handbook with private notes never shows a stripped private note to anyone.
* Behind a plain retriever over a shared store, the runs the library starts carry counts and
  the reader's own evidence, never another reader's text: only the retriever's own run holds
  what it found, as the framework records it.
"""

from __future__ import annotations

import logging
import re
import warnings
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tracers.context import collect_runs
from langchain_core.tracers.schemas import Run
from langchain_core.vectorstores import InMemoryVectorStore
from llama_index.core import VectorStoreIndex
from llama_index.core.schema import TextNode

from aizk_integrations import PUBLIC, ScopeDirectory, scope_metadata
from aizk_integrations import langchain as aizk_langchain
from aizk_integrations import llama_index as aizk_llama_index
from aizk_integrations.langchain_agents import AizkMemoryMiddleware
from tests.adapters.stores import Item, WordEmbeddings
from tests.adapters.word_embedding import WordEmbedding, word_vector

warnings.filterwarnings("ignore", message="`langchain-community` is being sunset")
from langchain_community.vectorstores.utils import filter_complex_metadata  # noqa: E402

QUESTION = "notes about week 3"
READERS = [f"reader-{number:02d}" for number in range(20)]
ITEMS = 10_000
EACH = ITEMS // len(READERS)
BUDGET = 8192
"""More than a reader's 500 items take, so every one of them is read: each bad record is told."""
SPOILED = [
    ("lane", "memory", "metadata 'lane' is 'memory'; allowed: sources"),
    ("lane", ["facts"], "metadata 'lane' is ['facts']; allowed: sources"),
    ("artifact_id", "not-a-uuid", "metadata 'artifact_id' is 'not-a-uuid'; expected a UUID"),
    ("artifact_content_id", 7, "metadata 'artifact_content_id' is 7; expected a UUID"),
]
"""How the malformed 1% are spoiled, and what the warning says of each."""


@cache
def corpus() -> tuple[list[Item], dict[str, str]]:
    """Each reader's 500 notes, every hundredth one malformed; and what is wrong with each
    malformed item, by id."""
    items, problems = [], {}
    for number in range(ITEMS):
        owner, nth = READERS[number % len(READERS)], number // len(READERS)
        metadata: dict[str, Any] = scope_metadata(owner)
        if nth % 100 == 3:
            key, value, problem = SPOILED[nth // 100 % len(SPOILED)]
            metadata[key] = value
        item = Item(f"{owner} note {number:05d} about week {nth % 7}", metadata)
        if nth % 100 == 3:
            problems[item.id] = problem
        items.append(item)
    assert len(problems) == ITEMS // 100
    return items, problems


@cache
def langchain_store() -> InMemoryVectorStore:
    items, _ = corpus()
    store = InMemoryVectorStore(WordEmbeddings())
    store.add_documents([Document(item.text, id=item.id, metadata=item.metadata) for item in items])
    return store


@cache
def llama_index_store() -> VectorStoreIndex:
    items, _ = corpus()
    nodes = [
        TextNode(
            id_=item.id, text=item.text, metadata=item.metadata, embedding=word_vector(item.text)
        )
        for item in items
    ]
    return VectorStoreIndex(nodes, embed_model=WordEmbedding())


def config(reader: ScopeDirectory | None) -> RunnableConfig:
    return {"configurable": {"aizk_reader": reader}} if reader is not None else {}


UUID_TEXT = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
OWNER = re.compile(r"reader-\d\d")


@cache
def langchain_retrievers() -> tuple[Any, Any]:
    """One app's retrievers, serving every reader: the reader's best 500 in the store's
    ranking, and the reader's packed block."""
    store = langchain_store()
    ranked = aizk_langchain.AizkScopedRetriever(vectorstore=store, search_kwargs={"k": EACH})
    packer = aizk_langchain.AizkEvidenceRetriever(
        base_retriever=aizk_langchain.AizkScopedRetriever(vectorstore=store),
        compressor=aizk_langchain.AizkEvidenceCompressor(budget=BUDGET),
    )
    return ranked, packer


def langchain_reader(name: str) -> tuple[list[str], tuple[str, Any]]:
    """The reader's items in the store's ranking, and their packed block, through LangChain."""
    ranked, packer = langchain_retrievers()
    request = config(ScopeDirectory.for_caller(name, {}))
    order = [str(document.id) for document in ranked.invoke(QUESTION, config=request)]
    [block] = packer.invoke(QUESTION, config=request)
    return order, (block.page_content, block.metadata["aizk_counts"])


@cache
def llama_index_retrievers() -> tuple[Any, Any]:
    index = llama_index_store()
    evidence = aizk_llama_index.AizkEvidencePostprocessor(budget=BUDGET)
    return (
        aizk_llama_index.AizkScopedRetriever(index, similarity_top_k=EACH),
        aizk_llama_index.AizkScopedRetriever(index, evidence=evidence),
    )


def llama_index_reader(name: str) -> tuple[list[str], tuple[str, Any]]:
    """The same through LlamaIndex, each request's reader bound with `for_reader`."""
    ranked, packer = llama_index_retrievers()
    reader = ScopeDirectory.for_caller(name, {})
    order = [scored.node.node_id for scored in ranked.for_reader(reader).retrieve(QUESTION)]
    [block] = packer.for_reader(reader).retrieve(QUESTION)
    return order, (block.node.get_content(), block.node.metadata["aizk_counts"])


PATHS: dict[
    str, tuple[Callable[[str], tuple[list[str], tuple[str, Any]]], str, Callable[..., str]]
] = {
    "LangChain": (
        langchain_reader,
        "aizk_integrations.langchain",
        "documents[{}] (id '{}')".format,
    ),
    "LlamaIndex": (
        llama_index_reader,
        "aizk_integrations.llama_index",
        "node '{1}' (position {0})".format,
    ),
}


@pytest.mark.parametrize("path", PATHS.values(), ids=PATHS.keys())
def test_ten_thousand_items_one_percent_malformed_serve_twenty_readers_each_told_of_their_own(
    path: tuple[Callable[[str], tuple[list[str], tuple[str, Any]]], str, Callable[..., str]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    ask, logger, name_of = path
    _, problems = corpus()
    for reader in READERS:
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger=logger):
            order, (block, counts) = ask(reader)  # no call fails
        assert len(order) == EACH
        own_bad = [
            (at, identifier) for at, identifier in enumerate(order) if identifier in problems
        ]
        assert len(own_bad) == EACH // 100
        assert counts == {
            "kept": EACH - len(own_bad),
            "cut_by_budget": 0,
            "withheld": len(own_bad),
            "unreadable": 0,
            "malformed": len(own_bad),
            "tokens_used": counts["tokens_used"],
            "budget": BUDGET,
            "max_fetch_reached": False,
        }
        assert set(OWNER.findall(block)) == {reader}
        [told] = [r.getMessage() for r in caplog.records if "malformed" in r.getMessage()]
        assert f"{len(own_bad)} items are malformed: " in told
        for at, identifier in own_bad:
            assert f"{name_of(at, identifier)}: {problems[identifier]}" in told
        assert set(UUID_TEXT.findall(told)) == {identifier for _, identifier in own_bad}
        assert set(OWNER.findall(told)) == set()  # no text of any item, theirs included


# A step that strips scopes publishes nothing

SAM, ANA = ScopeDirectory.for_caller("sam", {}), ScopeDirectory.for_caller("ana", {})
HANDBOOK = [f"Handbook page {page}: the office opens at nine." for page in range(3)]
PRIVATE = {
    "sam": ["Sam's therapist is Dr. Lee.", "Sam's salary review is on Friday."],
    "ana": ["Ana's gate code is 4417.", "Ana is leaving in June."],
}


def mixed_corpus() -> tuple[list[Document], set[str]]:
    """The handbook and both readers' notes, every other one of them ingested by a job that ran
    `filter_complex_metadata` (it drops list metadata, scopes included); and the texts of the
    stripped private notes."""
    written = [Document(text, metadata=scope_metadata(PUBLIC)) for text in HANDBOOK]
    written += [
        Document(text, metadata={**scope_metadata(owner), "source": f"{owner}.md"})
        for owner, texts in PRIVATE.items()
        for text in texts
    ]
    stripped = written[1::2]
    documents = written[::2] + filter_complex_metadata(stripped)
    assert all("scopes" not in document.metadata for document in documents[len(written[::2]) :])
    private = {text for texts in PRIVATE.values() for text in texts}
    return documents, {document.page_content for document in stripped} & private


def mixed_store() -> InMemoryVectorStore:
    store = InMemoryVectorStore(embedding=DeterministicFakeEmbedding(size=16))
    documents, _ = mixed_corpus()
    store.add_documents(documents)
    return store


def packer_only(reader: ScopeDirectory | None) -> str:
    store = mixed_store()
    chain = store.as_retriever(search_kwargs={"k": 20}) | (
        aizk_langchain.AizkEvidenceCompressor().as_runnable()
    )
    return chain.invoke(QUESTION, config=config(reader))


def compressor_with_its_directory(reader: ScopeDirectory | None) -> str:
    documents, _ = mixed_corpus()
    packer = aizk_langchain.AizkEvidenceCompressor(reader=reader)
    return "".join(d.page_content for d in packer.compress_documents(documents, QUESTION))


def scoped_retrieval(reader: ScopeDirectory | None) -> str:
    retriever = aizk_langchain.AizkEvidenceRetriever(
        base_retriever=aizk_langchain.AizkScopedRetriever(vectorstore=mixed_store())
    )
    return "".join(d.page_content for d in retriever.invoke(QUESTION, config=config(reader)))


STRIPPING: dict[str, Callable[[ScopeDirectory | None], str]] = {
    "a plain retriever and the LCEL step": packer_only,
    "the compressor alone": compressor_with_its_directory,
    "scoped retrieval": scoped_retrieval,
}


@pytest.mark.parametrize(
    ("path", "reader"),
    [
        *[
            pytest.param(path, reader, id=f"{name}, {label}")
            for name, path in STRIPPING.items()
            for label, reader in (("Sam", SAM), ("Ana", ANA))
        ],
        pytest.param(scoped_retrieval, None, id="scoped retrieval, no reader"),
        pytest.param(packer_only, None, id="a plain retriever and the LCEL step, no reader"),
        pytest.param(compressor_with_its_directory, None, id="the compressor alone, no reader"),
    ],
)
def test_a_private_note_stripped_of_its_scopes_is_shown_to_no_one(
    path: Callable[[ScopeDirectory | None], str], reader: ScopeDirectory | None
) -> None:
    _, stripped = mixed_corpus()
    assert stripped  # the pipeline stripped some private notes
    block = path(reader)
    assert [text for text in stripped if text in block] == []
    if path is not scoped_retrieval or reader is not None:
        assert HANDBOOK[0] in block  # the handbook written as public is shown to everyone


def test_a_stripped_note_is_withheld_with_a_warning_naming_the_step(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="aizk_integrations.langchain"):
        block = packer_only(SAM)
    assert "Sam's therapist" not in block
    assert "a step such as filter_complex_metadata dropped them" in caplog.text


# Behind a plain retriever, our runs carry no other reader's text

SAMS, ANAS = "Sam is testing the reranker.", "Ana's gate code is 4417."


def two_readers_store() -> InMemoryVectorStore:
    store = InMemoryVectorStore(embedding=DeterministicFakeEmbedding(size=16))
    store.add_documents(
        [
            Document(SAMS, metadata=scope_metadata("sam")),
            Document(ANAS, metadata=scope_metadata("ana")),
            Document("Ana's other note: buy twine.", metadata={"scopes": ["ana", 7.5]}),
        ]
    )
    return store


def lcel_chain() -> str:
    chain = (
        two_readers_store().as_retriever() | aizk_langchain.AizkEvidenceCompressor().as_runnable()
    )
    return chain.invoke(QUESTION, config=config(SAM))


def our_retriever() -> str:
    retriever = aizk_langchain.AizkEvidenceRetriever(
        base_retriever=two_readers_store().as_retriever()
    )
    return "".join(d.page_content for d in retriever.invoke(QUESTION, config=config(SAM)))


def agent_middleware() -> str:
    middleware = AizkMemoryMiddleware(two_readers_store().as_retriever())
    model = GenericFakeChatModel(messages=iter([AIMessage("ok")]))
    agent = create_agent(model, [], middleware=[middleware])
    result = agent.invoke({"messages": [HumanMessage(QUESTION)]}, config=config(SAM))
    return str(result["messages"][-1].content)


CHAINS: dict[str, Callable[[], str]] = {
    "retriever | packer.as_runnable()": lcel_chain,
    "AizkEvidenceRetriever over a plain retriever": our_retriever,
    "AizkMemoryMiddleware over a plain retriever": agent_middleware,
}
OURS = {"AizkEvidenceBlock", "AizkEvidenceCompressor", "AizkEvidenceRetriever"}


def every(runs: list[Run]) -> Iterator[Run]:
    for run in runs:
        yield run
        yield from every(run.child_runs)


@pytest.mark.parametrize("chain", CHAINS.values(), ids=CHAINS.keys())
def test_no_run_but_the_retrievers_own_holds_another_readers_text(chain: Callable[[], str]) -> None:
    with collect_runs() as collected:
        chain()
    runs = list(every(collected.traced_runs))
    carried = {run.name: f"{run.inputs!r} {run.outputs!r} {run.extra!r}" for run in runs}
    assert OURS & set(carried)  # at least one run of ours was traced
    assert "Ana" in carried["VectorStoreRetriever"]  # the framework's record of what it found
    assert [name for name, text in carried.items() if "Ana" in text] == ["VectorStoreRetriever"]
    for run in runs:
        if run.name in {"AizkEvidenceBlock", "AizkEvidenceCompressor"}:
            assert run.inputs == {"documents": 3}  # how many it was handed, not what they say
    assert any(SAMS in text for text in carried.values())  # Sam's own evidence is there
