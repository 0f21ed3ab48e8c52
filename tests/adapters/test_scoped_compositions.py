"""The request's reader reaches a scoped retriever wherever LangChain composes it: inside the
retrievers that run others (`MultiQueryRetriever`, `MergerRetriever`, `EnsembleRetriever`,
`RePhraseQueryRetriever`), invoked alone or in a chain, and through a server's authenticated
user; and a packer handed another packer's block, through any wrapper, is refused.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_classic.retrievers import (
    ContextualCompressionRetriever,
    EnsembleRetriever,
    MergerRetriever,
    MultiQueryRetriever,
    RePhraseQueryRetriever,
)
from langchain_classic.retrievers.document_compressors import DocumentCompressorPipeline
from langchain_community.document_transformers import LongContextReorder
from langchain_core.documents import Document
from langchain_core.language_models import FakeListLLM
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.vectorstores import InMemoryVectorStore

from aizk_integrations import ScopeDirectory
from aizk_integrations.langchain import (
    AizkEvidenceCompressor,
    AizkEvidenceRetriever,
    AizkScopedRetriever,
)
from aizk_integrations.langchain_agents import AizkMemoryMiddleware
from tests.adapters.recorders import ChatModelCalls
from tests.adapters.stores import WordEmbeddings
from tests.scoped_corpus import READERS, directory_of, notes, questions

NOTES = notes(400)
BUDGET = 120


def store() -> InMemoryVectorStore:
    shared = InMemoryVectorStore(WordEmbeddings())
    shared.add_documents(
        [Document(note.text, id=note.id, metadata=note.metadata) for note in NOTES]
    )
    return shared


SHARED = store()


def scoped(k: int = 4, **settings: Any) -> AizkScopedRetriever:
    return AizkScopedRetriever(vectorstore=SHARED, search_kwargs={"k": k}, **settings)


def llm() -> FakeListLLM:
    """Rewrites every question into the same two, as a query-expanding model would."""
    return FakeListLLM(responses=["garden budget\nrecipe travel"] * 100)


COMPOSITIONS: dict[str, Callable[[], BaseRetriever]] = {
    "MultiQueryRetriever": lambda: MultiQueryRetriever.from_llm(retriever=scoped(), llm=llm()),
    "MergerRetriever": lambda: MergerRetriever(retrievers=[scoped(), scoped(k=2)]),
    "EnsembleRetriever": lambda: EnsembleRetriever(
        retrievers=[scoped(), scoped(k=2)], weights=[0.5, 0.5]
    ),
    "RePhraseQueryRetriever": lambda: RePhraseQueryRetriever.from_llm(
        retriever=scoped(), llm=FakeListLLM(responses=["garden budget"] * 100)
    ),
}


def foreign(reader: str) -> set[str]:
    theirs = {note.text for note in NOTES if directory_of(reader).may_read(list(note.scopes))}
    return {note.text for note in NOTES} - theirs


def as_reader(reader: str) -> RunnableConfig:
    return {"configurable": {"aizk_reader": directory_of(reader)}}


def kept_texts(documents: list[Document]) -> list[str]:
    return [document.page_content for document in documents]


@pytest.mark.parametrize("name", list(COMPOSITIONS))
@pytest.mark.parametrize("how", ["invoked alone", "async", "in a chain", "in an async chain"])
def test_the_reader_reaches_a_scoped_retriever_inside_a_retriever_that_runs_others(
    name: str, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    if name == "RePhraseQueryRetriever" and "async" in how:
        pytest.skip("LangChain's RePhraseQueryRetriever has no async path (NotImplementedError)")
    packer = AizkEvidenceCompressor(budget=BUDGET, return_documents=True)
    composition = COMPOSITIONS[name]()
    for reader in READERS[:6]:
        question = questions(1, seed=READERS.index(reader))[0]
        config = as_reader(reader)
        with caplog.at_level(logging.WARNING):
            if how == "invoked alone":
                retriever = AizkEvidenceRetriever(base_retriever=composition, compressor=packer)
                kept = kept_texts(retriever.invoke(question, config))
            elif how == "async":
                retriever = AizkEvidenceRetriever(base_retriever=composition, compressor=packer)
                kept = kept_texts(asyncio.run(retriever.ainvoke(question, config)))
            else:
                chain = composition | AizkEvidenceCompressor(budget=BUDGET).as_runnable()
                block = (
                    chain.invoke(question, config)
                    if how == "in a chain"
                    else asyncio.run(chain.ainvoke(question, config))
                )
                kept = [text for text in (note.text for note in NOTES) if text in block]
        assert kept, (name, how, reader)
        assert not set(kept) & foreign(reader)
        assert "no reader" not in caplog.text


def test_a_server_authenticated_user_reaches_the_store_query_and_the_packer_alike() -> None:
    def reader_of(user: Any) -> ScopeDirectory:
        return directory_of(user["identity"])

    chain = (
        scoped(reader_of_user=reader_of)
        | AizkEvidenceCompressor(budget=BUDGET, reader_of_user=reader_of).as_runnable()
    )
    for reader in READERS:
        config: RunnableConfig = {"configurable": {"langgraph_auth_user": {"identity": reader}}}
        block = chain.invoke(questions(1, seed=READERS.index(reader))[0], config)
        assert block
        assert not any(text in block for text in foreign(reader))


def test_a_scoped_retriever_that_cannot_map_the_authenticated_user_says_what_to_give_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    config: RunnableConfig = {"configurable": {"langgraph_auth_user": {"identity": "user-01"}}}
    with caplog.at_level(logging.WARNING):
        assert scoped().invoke("garden", config) == []
    assert (
        "scoped retrieval has no reader for this request, so it retrieves nothing; the request "
        "names an authenticated user ('langgraph_auth_user') but nothing maps it to a reader "
        "here: give this part the packer's reader_of_user too"
    ) in caplog.text


def test_the_call_own_k_is_the_number_returned() -> None:
    for k in (1, 3, 7):
        assert len(scoped().invoke("garden", as_reader("user-02"), k=k)) == k


def test_a_reader_of_no_scopes_is_answered_with_nothing_and_the_store_is_not_asked() -> None:
    class Refusing(InMemoryVectorStore):
        def similarity_search(self, *args: Any, **kwargs: Any) -> list[Document]:
            raise AssertionError("the store was asked for a reader of no scopes")

    nobody: RunnableConfig = {"configurable": {"aizk_reader": ScopeDirectory(scopes={})}}
    retriever = AizkScopedRetriever(vectorstore=Refusing(WordEmbeddings()))
    assert retriever.invoke("garden", nobody) == []
    assert AizkEvidenceRetriever(base_retriever=retriever).invoke("garden", nobody) == []


# Packing twice, or after a reorder, is refused: when built where the retriever's arguments
# show it, and at run time through whatever wraps it


def packing() -> AizkEvidenceRetriever:
    return AizkEvidenceRetriever(base_retriever=scoped(), compressor=AizkEvidenceCompressor())


WRAPPED: dict[str, Callable[[], Any]] = {
    "with_retry": lambda: packing().with_retry(),
    "with_fallbacks": lambda: packing().with_fallbacks([scoped()]),
    "with_config": lambda: packing().with_config(run_name="evidence"),
    "a RunnableSequence": lambda: RunnableLambda(lambda question: question) | packing(),
    "a RunnableLambda around it": lambda: around(packing()),
}


def around(inner: AizkEvidenceRetriever) -> RunnableLambda[str, list[Document]]:
    """A function calling a packing retriever: nothing LangChain documents lists what it calls."""
    return RunnableLambda(lambda question: inner.invoke(question))


@pytest.mark.parametrize("how", list(WRAPPED))
@pytest.mark.parametrize("asynchronous", [False, True], ids=["invoke", "ainvoke"])
def test_a_packer_inside_any_wrapper_is_refused_when_built_or_when_it_hands_back_a_block(
    how: str, asynchronous: bool
) -> None:
    refused = (
        r"the retriever given to AizkEvidenceRetriever (already packs \(AizkEvidenceCompressor\)"
        r"|returned an evidence block: it packs already), and AizkEvidenceRetriever packs what"
    )

    def built_and_called() -> object:
        outer = AizkEvidenceRetriever(base_retriever=WRAPPED[how]())
        if asynchronous:
            return asyncio.run(outer.ainvoke("garden budget", as_reader("user-03")))
        return outer.invoke("garden budget", as_reader("user-03"))

    with pytest.raises(ValueError, match=refused):
        built_and_called()


def test_a_packer_in_the_arguments_is_refused_when_built() -> None:
    in_a_sequence = RunnableLambda(lambda question: question) | packing()
    with pytest.raises(
        ValueError, match=r"the retriever given to AizkEvidenceRetriever already packs"
    ):
        AizkEvidenceRetriever(base_retriever=in_a_sequence)


def reordering() -> ContextualCompressionRetriever:
    return ContextualCompressionRetriever(
        base_compressor=DocumentCompressorPipeline(transformers=[LongContextReorder()]),
        base_retriever=scoped(),
    )


def test_a_reorder_before_the_packer_is_refused_with_why() -> None:
    with pytest.raises(ValueError, match=r"LongContextReorder reorders") as raised:
        AizkEvidenceRetriever(base_retriever=reordering())
    assert (
        "LongContextReorder reorders the documents before AizkEvidenceCompressor: it moves "
        "the best ones to both ends of the list, and the packer keeps the longest prefix of "
        "the order it is handed, so it keeps every other one of the best and drops the "
        "rest. Drop the reorder: the packer needs the retriever's (or reranker's) merit "
        "order, and the block keeps it"
    ) in str(raised.value)


def test_a_packer_handed_a_block_says_the_retrieval_packs_twice(
    caplog: pytest.LogCaptureFixture,
) -> None:
    packer = AizkEvidenceCompressor()
    with caplog.at_level(logging.WARNING):
        block = packing().invoke("garden budget", as_reader("user-03"))
        assert block
        assert packer.compress_documents(block, "garden budget") == []
    assert "1 item is an evidence block already: the retrieval packs twice" in caplog.text
    assert "filter_complex_metadata" not in caplog.text


@dataclass
class Tenant:
    """An agent's runtime context, naming the turn's reader."""

    aizk_reader: ScopeDirectory


@pytest.mark.parametrize("name", ["MultiQueryRetriever", "MergerRetriever"])
@pytest.mark.parametrize("asynchronous", [False, True], ids=["invoke", "ainvoke"])
def test_the_reader_of_an_agents_context_reaches_a_scoped_retriever_inside_the_memorys(
    name: str, asynchronous: bool
) -> None:
    calls = ChatModelCalls()
    reader = READERS[3]
    memory = AizkMemoryMiddleware(COMPOSITIONS[name](), AizkEvidenceCompressor(budget=BUDGET))
    model = GenericFakeChatModel(messages=iter([AIMessage("answer")]))
    agent: Any = create_agent(model, middleware=[memory], context_schema=Tenant)
    question = {"messages": [("human", questions(1, seed=3)[0])]}
    turn = {"config": {"callbacks": [calls]}, "context": Tenant(directory_of(reader))}
    if asynchronous:
        asyncio.run(agent.ainvoke(question, **turn))
    else:
        agent.invoke(question, **turn)
    [call] = calls.calls
    prompt = " ".join(str(message.content) for message in call)
    assert any(note.text in prompt for note in NOTES if note.text not in foreign(reader))
    assert not any(text in prompt for text in foreign(reader))
