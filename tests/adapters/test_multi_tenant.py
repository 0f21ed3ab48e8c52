"""One shared chain or engine, the reader chosen per request: every path users take carries it.

The property: whatever the readers, the items and the path a request takes through LangChain or
LlamaIndex, what reaches the prompt is exactly the evidence that request's reader may see (every
scope of it theirs), and with no reader only evidence that names no scope. Paths that cannot
carry the reader (a bare `ContextualCompressionRetriever`) fail closed: they
show only evidence that names no scope, never another reader's. LlamaIndex takes the reader on
the objects a request uses (`for_reader`), so it reaches every thread, task and stream they run
in; an engine whose evidence was never bound to the request's reader fails closed the same way.
"""

from __future__ import annotations

import asyncio
import re
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_classic.chains import create_retrieval_chain
from langchain_classic.chains.combine_documents import create_stuff_documents_chain
from langchain_classic.retrievers import ContextualCompressionRetriever
from langchain_classic.retrievers.document_compressors import DocumentCompressorPipeline
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import FakeListLLM
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import create_retriever_tool
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.prebuilt import create_react_agent
from llama_index.core import VectorStoreIndex
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.chat_engine.types import BaseChatEngine, ChatMode
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.memory import ChatMemoryBuffer
from llama_index.core.schema import TextNode

from aizk_integrations import PUBLIC, EvidenceError, Scope, ScopeDirectory
from aizk_integrations.langchain import AizkEvidenceCompressor, AizkEvidenceRetriever
from aizk_integrations.langchain_agents import AizkMemoryMiddleware
from aizk_integrations.llama_index import (
    AizkCondensePlusContextChatEngine,
    AizkContextChatEngine,
    AizkEvidencePostprocessor,
    AizkMemoryBlock,
)

QUESTION = "what do I know?"
PEOPLE = ("alice", "bob")
ORGS = ("org-x", "org-y")
MARKER = re.compile(r"note-\d\d")


@dataclass(frozen=True)
class Note:
    marker: str
    scopes: tuple[str, ...]


notes = st.lists(
    st.lists(st.sampled_from((*PEOPLE, *ORGS, PUBLIC)), max_size=3, unique=True).map(tuple),
    min_size=1,
    max_size=8,
).map(lambda drawn: [Note(f"note-{index:02d}", scopes) for index, scopes in enumerate(drawn)])
readers = st.one_of(
    st.none(),
    st.builds(
        lambda person, orgs: ScopeDirectory.for_caller(
            person, {org: Scope(name=org.removeprefix("org-")) for org in orgs}
        ),
        st.sampled_from(PEOPLE),
        st.sets(st.sampled_from(ORGS)),
    ),
)


def visible(corpus: list[Note], reader: ScopeDirectory | None) -> set[str]:
    """What the reader may see, from DESIGN.md's words rather than the package's code: with no
    reader, only public items; an item in no scope is no one's."""
    if reader is None:
        return {note.marker for note in corpus if set(note.scopes) == {PUBLIC}}
    return {
        note.marker
        for note in corpus
        if note.scopes and all(scope in reader.scopes for scope in note.scopes)
    }


def documents(corpus: list[Note]) -> list[Document]:
    return [Document(note.marker, metadata={"scopes": list(note.scopes)}) for note in corpus]


def retriever(corpus: list[Note]) -> BaseRetriever:
    store = InMemoryVectorStore(embedding=DeterministicFakeEmbedding(size=8))
    store.add_documents(documents(corpus))
    return store.as_retriever(search_kwargs={"k": len(corpus)})


def config(reader: ScopeDirectory | None) -> RunnableConfig:
    return {"configurable": {"aizk_reader": reader}} if reader is not None else {}


class ToolCallingFake(GenericFakeChatModel):
    """LangChain's fake chat model, able to be handed tools: it calls `recall` once, then ends."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


def agent_model() -> ToolCallingFake:
    call = {"name": "recall", "args": {"query": QUESTION}, "id": "call-1"}
    return ToolCallingFake(messages=iter([AIMessage("", tool_calls=[call]), AIMessage("done")]))


Path = Callable[[list[Note], ScopeDirectory | None], str]


def compressor_with_its_own_directory(corpus: list[Note], reader: ScopeDirectory | None) -> str:
    packer = AizkEvidenceCompressor(reader=reader)
    return "".join(d.page_content for d in packer.compress_documents(documents(corpus), QUESTION))


def runnable_in_a_chain(corpus: list[Note], reader: ScopeDirectory | None) -> str:
    chain = retriever(corpus) | AizkEvidenceCompressor().as_runnable()
    return chain.invoke(QUESTION, config=config(reader))


def runnable_batch(corpus: list[Note], reader: ScopeDirectory | None) -> str:
    chain = retriever(corpus) | AizkEvidenceCompressor().as_runnable()
    first, second = chain.batch([QUESTION, QUESTION], config=[config(reader), config(reader)])
    assert first == second
    return first


def runnable_abatch(corpus: list[Note], reader: ScopeDirectory | None) -> str:
    chain = retriever(corpus) | AizkEvidenceCompressor().as_runnable()
    blocks = asyncio.run(chain.abatch([QUESTION], config=config(reader)))
    return blocks[0]


def compression_retriever(corpus: list[Note]) -> ContextualCompressionRetriever:
    return ContextualCompressionRetriever(
        base_compressor=AizkEvidenceCompressor(), base_retriever=retriever(corpus)
    )


def retrieval_chain(corpus: list[Note], reader: ScopeDirectory | None) -> str:
    prompt = ChatPromptTemplate.from_messages([("human", "{context}\n\n{input}")])
    combine = create_stuff_documents_chain(FakeListLLM(responses=["ok"]), prompt)
    chain = create_retrieval_chain(compression_retriever(corpus), combine)
    result = chain.invoke({"input": QUESTION}, config=config(reader))
    return "".join(document.page_content for document in result["context"])


def retrieval_chain_async(corpus: list[Note], reader: ScopeDirectory | None) -> str:
    prompt = ChatPromptTemplate.from_messages([("human", "{context}\n\n{input}")])
    combine = create_stuff_documents_chain(FakeListLLM(responses=["ok"]), prompt)
    chain = create_retrieval_chain(compression_retriever(corpus), combine)
    result = asyncio.run(chain.ainvoke({"input": QUESTION}, config=config(reader)))
    return "".join(document.page_content for document in result["context"])


def retriever_tool(corpus: list[Note], reader: ScopeDirectory | None) -> str:
    tool = create_retriever_tool(compression_retriever(corpus), "recall", "Recall memory.")
    return str(tool.invoke(QUESTION, config=config(reader)))


def retriever_tool_async(corpus: list[Note], reader: ScopeDirectory | None) -> str:
    tool = create_retriever_tool(compression_retriever(corpus), "recall", "Recall memory.")
    return str(asyncio.run(tool.ainvoke(QUESTION, config=config(reader))))


def langgraph_agent(corpus: list[Note], reader: ScopeDirectory | None) -> str:
    tool = create_retriever_tool(compression_retriever(corpus), "recall", "Recall memory.")
    with warnings.catch_warnings():  # create_react_agent is deprecated for create_agent
        warnings.simplefilter("ignore")
        agent = create_react_agent(agent_model(), [tool])
    result = agent.invoke({"messages": [("human", QUESTION)]}, config=config(reader))
    [message] = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    return str(message.content)


def our_retriever(corpus: list[Note], reader: ScopeDirectory | None) -> str:
    wrapped = AizkEvidenceRetriever(base_retriever=retriever(corpus))
    return "".join(d.page_content for d in wrapped.invoke(QUESTION, config=config(reader)))


def our_retriever_async(corpus: list[Note], reader: ScopeDirectory | None) -> str:
    wrapped = AizkEvidenceRetriever(base_retriever=retriever(corpus))
    found = asyncio.run(wrapped.ainvoke(QUESTION, config=config(reader)))
    return "".join(document.page_content for document in found)


def our_retriever_as_a_tool(corpus: list[Note], reader: ScopeDirectory | None) -> str:
    wrapped = AizkEvidenceRetriever(base_retriever=retriever(corpus))
    tool = create_retriever_tool(wrapped, "recall", "Recall memory.")
    return str(tool.invoke(QUESTION, config=config(reader)))


def on_a_thread(path: Path) -> Path:
    def threaded(corpus: list[Note], reader: ScopeDirectory | None) -> str:
        with ThreadPoolExecutor(max_workers=2) as pool:
            return pool.submit(path, corpus, reader).result()

    return threaded


def index(corpus: list[Note]) -> VectorStoreIndex:
    nodes = [TextNode(text=note.marker, metadata={"scopes": list(note.scopes)}) for note in corpus]
    return VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=8))


SHARED_EVIDENCE = AizkEvidencePostprocessor()
"""One postprocessor for every request, as an app keeps it; each request binds its reader."""


def evidence_for(reader: ScopeDirectory | None) -> AizkEvidencePostprocessor:
    """The shared postprocessor for this request: bound to its reader, if it has one."""
    return SHARED_EVIDENCE if reader is None else SHARED_EVIDENCE.for_reader(reader)


def query_engine_answer(corpus: list[Note], reader: ScopeDirectory | None) -> str:
    engine = index(corpus).as_query_engine(
        llm=MockLLM(),
        node_postprocessors=[evidence_for(reader)],
        similarity_top_k=len(corpus),
    )
    return str(engine.query(QUESTION))


def query_engine_async(corpus: list[Note], reader: ScopeDirectory | None) -> str:
    engine = index(corpus).as_query_engine(
        llm=MockLLM(),
        node_postprocessors=[evidence_for(reader)],
        similarity_top_k=len(corpus),
    )

    async def ask() -> str:
        task = asyncio.create_task(engine.aquery(QUESTION))
        return str(await task)

    return asyncio.run(ask())


def context_chat_engine(corpus: list[Note], reader: ScopeDirectory | None) -> str:
    llm = MockLLM()
    engine = index(corpus).as_chat_engine(
        chat_mode=ChatMode.CONTEXT,
        llm=llm,
        memory=ChatMemoryBuffer.from_defaults(llm=llm),
        node_postprocessors=[evidence_for(reader)],
        similarity_top_k=len(corpus),
    )
    return str(engine.chat(QUESTION))


def query_engine_on_a_thread(corpus: list[Note], reader: ScopeDirectory | None) -> str:
    engine = index(corpus).as_query_engine(
        llm=MockLLM(),
        node_postprocessors=[evidence_for(reader)],
        similarity_top_k=len(corpus),
    )
    with ThreadPoolExecutor(max_workers=1) as pool:  # no context copied: none is needed
        return pool.submit(lambda: str(engine.query(QUESTION))).result()


def engine_never_bound(corpus: list[Note], reader: ScopeDirectory | None) -> str:
    # The request has a reader, but the engine's postprocessor was never bound to it.
    engine = index(corpus).as_query_engine(
        llm=MockLLM(),
        node_postprocessors=[SHARED_EVIDENCE],
        similarity_top_k=len(corpus),
    )
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: str(engine.query(QUESTION))).result()


def runnable_stream(corpus: list[Note], reader: ScopeDirectory | None) -> str:
    chain = retriever(corpus) | AizkEvidenceCompressor().as_runnable()
    return "".join(chain.stream(QUESTION, config=config(reader)))


def pipeline_in_retrieval_chain(corpus: list[Note], reader: ScopeDirectory | None) -> str:
    pipeline = DocumentCompressorPipeline(transformers=[AizkEvidenceCompressor()])
    wrapped = ContextualCompressionRetriever(
        base_compressor=pipeline, base_retriever=retriever(corpus)
    )
    prompt = ChatPromptTemplate.from_messages([("human", "{context}\n\n{input}")])
    combine = create_stuff_documents_chain(FakeListLLM(responses=["ok"]), prompt)
    result = create_retrieval_chain(wrapped, combine).invoke({"input": QUESTION}, config(reader))
    return "".join(document.page_content for document in result["context"])


def create_agent_with_the_tool(corpus: list[Note], reader: ScopeDirectory | None) -> str:
    tool = create_retriever_tool(compression_retriever(corpus), "recall", "Recall memory.")
    agent = create_agent(agent_model(), [tool])
    result = agent.invoke({"messages": [HumanMessage(QUESTION)]}, config=config(reader))
    [message] = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    return str(message.content)


class ModelInputs(BaseCallbackHandler):
    """Every message a chat model was called with, as text."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def on_chat_model_start(
        self, serialized: Any, messages: list[list[BaseMessage]], **kwargs: Any
    ) -> None:
        self.seen.extend(str(message.content) for message in messages[0])


@dataclass
class Tenant:
    aizk_reader: ScopeDirectory | None


def memory_middleware(carrier: str) -> Path:
    def run(corpus: list[Note], reader: ScopeDirectory | None) -> str:
        model = GenericFakeChatModel(messages=iter([AIMessage("ok")]))
        agent = create_agent(
            model, [], middleware=[AizkMemoryMiddleware(retriever(corpus))], context_schema=Tenant
        )
        inputs = ModelInputs()
        request: RunnableConfig = {"callbacks": [inputs]}
        if carrier == "config":
            request = {**config(reader), **request}
        agent.invoke({"messages": [HumanMessage(QUESTION)]}, request, context=Tenant(reader))
        return "".join(inputs.seen)

    return run


def chat_engine(engine: type[BaseChatEngine], streaming: bool = False) -> Path:
    def run(corpus: list[Note], reader: ScopeDirectory | None) -> str:
        llm = MockLLM()
        shared: BaseChatEngine = engine.from_defaults(  # type: ignore[attr-defined]
            retriever=index(corpus).as_retriever(similarity_top_k=len(corpus)),
            llm=llm,
            memory=ChatMemoryBuffer.from_defaults(llm=llm),
            node_postprocessors=[SHARED_EVIDENCE],
        )
        chat = shared if reader is None else shared.for_reader(reader)  # type: ignore[attr-defined]
        if streaming:
            return "".join(chat.stream_chat(QUESTION).response_gen)
        return str(chat.chat(QUESTION))

    return run


def memory_block(corpus: list[Note], reader: ScopeDirectory | None) -> str:
    block = AizkMemoryBlock(
        retriever=index(corpus).as_retriever(similarity_top_k=len(corpus)),
        evidence=evidence_for(reader),
    )
    asked = [ChatMessage(role=MessageRole.USER, content=QUESTION)]
    return asyncio.run(block.aget(asked))


CARRY_THE_READER: dict[str, Path] = {
    "compressor with its own directory": compressor_with_its_own_directory,
    "runnable in a chain": runnable_in_a_chain,
    "runnable batch": runnable_batch,
    "runnable abatch": runnable_abatch,
    "runnable stream": runnable_stream,
    "ContextualCompressionRetriever in create_retrieval_chain": retrieval_chain,
    "ContextualCompressionRetriever in create_retrieval_chain, async": retrieval_chain_async,
    "DocumentCompressorPipeline in create_retrieval_chain": pipeline_in_retrieval_chain,
    "create_retriever_tool with config": retriever_tool,
    "create_retriever_tool with config, async": retriever_tool_async,
    "LangGraph create_react_agent with that tool": langgraph_agent,
    "LangChain create_agent with that tool": create_agent_with_the_tool,
    "create_agent with AizkMemoryMiddleware, reader in config": memory_middleware("config"),
    "create_agent with AizkMemoryMiddleware, reader in context": memory_middleware("context"),
    "AizkEvidenceRetriever invoked with config": our_retriever,
    "AizkEvidenceRetriever, async": our_retriever_async,
    "AizkEvidenceRetriever as a retriever tool": our_retriever_as_a_tool,
    "runnable in a chain on a thread": on_a_thread(runnable_in_a_chain),
    "LangGraph agent on a thread": on_a_thread(langgraph_agent),
    "LlamaIndex query engine with a bound postprocessor": query_engine_answer,
    "LlamaIndex aquery task with a bound postprocessor": query_engine_async,
    "LlamaIndex context chat engine with a bound postprocessor": context_chat_engine,
    "LlamaIndex query on a plain thread with a bound postprocessor": query_engine_on_a_thread,
    "AizkContextChatEngine.for_reader": chat_engine(AizkContextChatEngine),
    "AizkContextChatEngine.for_reader stream_chat": chat_engine(AizkContextChatEngine, True),
    "AizkCondensePlusContextChatEngine.for_reader": chat_engine(AizkCondensePlusContextChatEngine),
    "AizkMemoryBlock with a bound postprocessor": memory_block,
}


def bare_compression_retriever(corpus: list[Note], reader: ScopeDirectory | None) -> str:
    found = compression_retriever(corpus).invoke(QUESTION, config=config(reader))
    return "".join(document.page_content for document in found)


FAIL_CLOSED: dict[str, Path] = {
    "a bare ContextualCompressionRetriever.invoke(config=...)": bare_compression_retriever,
    "a LlamaIndex engine whose postprocessor was never bound, on a thread": engine_never_bound,
}

paths = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def shown(output: str) -> set[str]:
    return set(MARKER.findall(output))


@pytest.mark.parametrize("path", CARRY_THE_READER.values(), ids=CARRY_THE_READER.keys())
@paths
@given(corpus=notes, reader=readers)
def test_every_path_shows_exactly_what_the_requests_reader_may_see(
    path: Path, corpus: list[Note], reader: ScopeDirectory | None
) -> None:
    assert shown(path(corpus, reader)) == visible(corpus, reader)


@pytest.mark.parametrize("path", FAIL_CLOSED.values(), ids=FAIL_CLOSED.keys())
@paths
@given(corpus=notes, reader=readers)
def test_a_path_that_cannot_carry_the_reader_shows_only_public_evidence(
    path: Path, corpus: list[Note], reader: ScopeDirectory | None
) -> None:
    assert shown(path(corpus, reader)) == visible(corpus, None)


@settings(max_examples=25, deadline=None)
@given(st.lists(readers, min_size=2, max_size=6), notes)
def test_concurrent_requests_through_one_chain_each_see_their_own_readers_evidence(
    requests: list[ScopeDirectory | None], corpus: list[Note]
) -> None:
    chain = AizkEvidenceRetriever(base_retriever=retriever(corpus))

    async def everyone() -> list[list[Document]]:
        return await asyncio.gather(
            *(chain.ainvoke(QUESTION, config=config(reader)) for reader in requests)
        )

    for reader, found in zip(requests, asyncio.run(everyone()), strict=True):
        assert shown("".join(d.page_content for d in found)) == visible(corpus, reader)


def test_our_retriever_lists_the_settings_a_caller_may_choose_and_never_the_reader() -> None:
    wrapped = AizkEvidenceRetriever(base_retriever=retriever([Note("note-00", ())]))
    assert [spec.id for spec in wrapped.config_specs] == ["aizk_budget", "aizk_room"]


def mistyped(corpus: list[Note]) -> dict[str, Callable[[], object]]:
    wrong: RunnableConfig = {"configurable": {"aizk_directry": None}}
    tool = create_retriever_tool(compression_retriever(corpus), "recall", "Recall memory.")
    chain = retriever(corpus) | AizkEvidenceCompressor().as_runnable()
    ours = AizkEvidenceRetriever(base_retriever=retriever(corpus))
    return {
        "runnable": lambda: chain.invoke(QUESTION, config=wrong),
        "retriever tool": lambda: tool.invoke(QUESTION, config=wrong),
        "AizkEvidenceRetriever": lambda: ours.invoke(QUESTION, config=wrong),
    }


@pytest.mark.parametrize("path", ["runnable", "retriever tool", "AizkEvidenceRetriever"])
def test_a_mistyped_config_key_is_an_error_naming_the_known_keys(path: str) -> None:
    call = mistyped([Note("note-00", ("alice",))])[path]
    with pytest.raises(ValueError, match="'aizk_directry' is not an aizk setting") as raised:
        call()
    assert "'aizk_reader', 'aizk_budget'" in str(raised.value)


# Another reader's bad item is not this reader's problem

hostile_values = st.one_of(
    st.text(min_size=0, max_size=50),
    st.text(min_size=5000, max_size=6000),
    st.integers(),
    st.lists(st.text(max_size=5), max_size=3),
    st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3),
    st.binary(max_size=20),
    st.none(),
)


@settings(max_examples=60, deadline=None)
@given(
    lane=hostile_values,
    artifact=hostile_values,
    content=hostile_values,
    text=st.one_of(st.text(max_size=20), st.binary(max_size=5), st.none(), st.integers()),
)
def test_another_readers_malformed_item_never_fails_nor_appears_in_a_call(
    lane: object, artifact: object, content: object, text: object
) -> None:
    alice = ScopeDirectory.for_caller("alice", {})
    bobs = Document.model_construct(
        page_content=text,
        metadata={
            "scopes": ["bob"],
            "lane": lane,
            "artifact_id": artifact,
            "artifact_content_id": content,
        },
    )
    mine = Document("note-01", metadata={"scopes": ["alice"]})
    packer = AizkEvidenceCompressor(reader=alice)
    [block] = packer.compress_documents([bobs, mine, bobs], QUESTION)
    assert shown(block.page_content) == {"note-01"}
    assert block.metadata["aizk_counts"]["withheld"] == 2


@settings(max_examples=80, deadline=None)
@given(
    key=st.sampled_from(["lane", "artifact_id", "artifact_content_id", "scopes"]),
    value=hostile_values,
    identifier=st.text(min_size=0, max_size=20_000),
)
def test_every_error_is_short_whatever_the_input(key: str, value: object, identifier: str) -> None:
    alice = ScopeDirectory.for_caller("alice", {})
    metadata: dict[str, object] = {"scopes": ["alice"], key: value}
    document = Document.model_construct(id=identifier, page_content="x", metadata=metadata)
    packer = AizkEvidenceCompressor(reader=alice)
    errors: list[str] = []
    try:
        packer.compress_documents([document], QUESTION)
    except EvidenceError as error:
        errors.append(str(error))
    assert all(len(message) <= 2000 for message in errors)


def test_a_malformed_scopes_field_fails_the_call_without_quoting_the_items_text() -> None:
    secret = "Bob's therapist notes, 2026-03"
    document = Document(secret, id="bob-diary-7", metadata={"scopes": {"bob": True}})
    assert AizkEvidenceCompressor().compress_documents([document], QUESTION) == []
    with pytest.raises(EvidenceError) as raised:
        AizkEvidenceCompressor(raise_on_malformed=True).compress_documents([document], QUESTION)
    message = str(raised.value)
    assert message.startswith("documents[0]: metadata 'scopes'")
    assert secret not in message
    assert "bob-diary-7" not in message


# A reader, once built, stays the reader


def test_changing_the_mapping_a_directory_was_built_from_widens_nothing() -> None:
    organizations = {"org-x": Scope(name="x")}
    alice = ScopeDirectory.for_caller("alice", organizations)
    packer = AizkEvidenceCompressor(reader=alice)
    organizations["org-y"] = Scope(name="y")
    bobs = Document("note-02", metadata={"scopes": ["org-y"]})
    assert packer.compress_documents([bobs], QUESTION) == []


@pytest.mark.parametrize("adapter", [AizkEvidenceCompressor, AizkEvidencePostprocessor])
def test_an_adapters_reader_can_be_neither_reassigned_nor_deleted(
    adapter: type[AizkEvidenceCompressor | AizkEvidencePostprocessor],
) -> None:
    alice = ScopeDirectory.for_caller("alice", {})
    packer = adapter(reader=alice)
    with pytest.raises((AttributeError, TypeError, ValueError)):
        packer.reader = None
    with pytest.raises((AttributeError, TypeError, ValueError)):
        del packer.reader
    assert packer.reader == alice


def test_for_reader_refuses_anything_but_a_directory_saying_why() -> None:
    llm = MockLLM()
    chat = AizkContextChatEngine.from_defaults(
        retriever=index([Note("note-00", ("alice",))]).as_retriever(),
        llm=llm,
        memory=ChatMemoryBuffer.from_defaults(llm=llm),
        node_postprocessors=[SHARED_EVIDENCE],
    )
    not_a_reader: Sequence[Any] = [None, {"alice": "private"}, "alice"]
    for value in not_a_reader:
        for handle in (SHARED_EVIDENCE.for_reader, chat.for_reader):
            with pytest.raises(TypeError, match="not switch authorization off"):
                handle(value)
