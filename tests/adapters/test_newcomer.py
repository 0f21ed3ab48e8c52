"""A newcomer's first hour: plain documents, settings and messages, each ending in its fix.

Every message a first run meets names what to write, whole: the setting that shows a corpus
named no scope, the key of a setting an adapter does not take, the package a token counter is
missing, the list that scopes written as one string should be.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_classic.retrievers import ContextualCompressionRetriever
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import FakeListChatModel
from langchain_core.vectorstores import InMemoryVectorStore
from llama_index.core import Settings, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.memory import Memory
from llama_index.core.schema import TextNode
from pydantic import ValidationError

from aizk_integrations import PUBLIC, ScopeDirectory, scope_metadata
from aizk_integrations import langchain as aizk_langchain
from aizk_integrations import langchain_agents as aizk_agents
from aizk_integrations import llama_index as aizk_llama_index
from aizk_integrations.counters import counter_from_langchain, counter_from_llama_index

NOTES = ["The club meets on Thursdays.", "Bring the Piranesi copies."]


def plain_store() -> InMemoryVectorStore:
    store = InMemoryVectorStore(embedding=DeterministicFakeEmbedding(size=16))
    store.add_documents([Document(text) for text in NOTES])  # no metadata at all
    return store


def plain_index() -> VectorStoreIndex:
    nodes = [TextNode(text=text) for text in NOTES]
    return VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=8))


def langchain_first_run(**settings: Any) -> str:
    packer = aizk_langchain.AizkEvidenceCompressor(**settings)
    retriever = ContextualCompressionRetriever(
        base_compressor=packer, base_retriever=plain_store().as_retriever()
    )
    return "".join(document.page_content for document in retriever.invoke("club"))


def llama_index_first_run(**settings: Any) -> str:
    evidence = aizk_llama_index.AizkEvidencePostprocessor(**settings)
    engine = plain_index().as_query_engine(llm=MockLLM(), node_postprocessors=[evidence])
    return "".join(scored.node.get_content() for scored in engine.query("club").source_nodes)


FIRST_RUNS = {"langchain": langchain_first_run, "llama_index": llama_index_first_run}


@pytest.mark.parametrize("framework", list(FIRST_RUNS))
def test_plain_documents_are_withheld_with_a_warning_naming_the_setting_that_shows_them(
    framework: str, caplog: pytest.LogCaptureFixture
) -> None:
    first_run = FIRST_RUNS[framework]
    with caplog.at_level(logging.WARNING, logger="aizk_integrations"):
        assert first_run() == ""
    [warning] = [record.getMessage() for record in caplog.records]
    assert "If the corpus is public as a whole" in warning
    assert "build the packer with allow_unscoped=True" in warning
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="aizk_integrations"):
        block = first_run(allow_unscoped=True)  # the setting, pasted in as the warning says it
    assert all(note in block for note in NOTES)
    assert caplog.records == []


def test_a_private_note_stripped_of_its_scopes_is_not_shown_beside_scoped_ones() -> None:
    # The multi-reader guarantee the default keeps: without allow_unscoped, no item that names
    # no scope is shown, so a pipeline step that drops a private note's scopes publishes nothing.
    sam = ScopeDirectory.for_caller("sam", {})
    packer = aizk_langchain.AizkEvidenceCompressor(reader=sam)
    documents = [
        Document("Sam's note.", metadata=scope_metadata("sam")),
        Document("Ana's diary, its scopes stripped by a step."),
    ]
    [block] = packer.compress_documents(documents, "q")
    assert "Sam's note." in block.page_content
    assert "Ana's diary" not in block.page_content


def adapters_built_with(extra: dict[str, Any]) -> dict[str, Any]:
    store = plain_store()
    index = plain_index()
    evidence = aizk_llama_index.AizkEvidencePostprocessor()
    return {
        "AizkEvidenceCompressor": lambda: aizk_langchain.AizkEvidenceCompressor(**extra),
        "AizkEvidenceRetriever": lambda: aizk_langchain.AizkEvidenceRetriever(
            base_retriever=store.as_retriever(), **extra
        ),
        "langchain.AizkScopedRetriever": lambda: aizk_langchain.AizkScopedRetriever(
            vectorstore=store, **extra
        ),
        "AizkMemoryMiddleware": lambda: aizk_agents.AizkMemoryMiddleware(
            retriever=store.as_retriever(), **extra
        ),
        "AizkToolEvidenceMiddleware": lambda: aizk_agents.AizkToolEvidenceMiddleware(**extra),
        "AizkEvidencePostprocessor": lambda: aizk_llama_index.AizkEvidencePostprocessor(**extra),
        "llama_index.AizkScopedRetriever": lambda: aizk_llama_index.AizkScopedRetriever(
            index, **extra
        ),
        "AizkContextChatEngine": lambda: aizk_llama_index.AizkContextChatEngine.from_defaults(
            index.as_retriever(), node_postprocessors=[evidence], llm=MockLLM(), **extra
        ),
        "AizkCondensePlusContextChatEngine": (
            lambda: aizk_llama_index.AizkCondensePlusContextChatEngine.from_defaults(
                index.as_retriever(), node_postprocessors=[evidence], llm=MockLLM(), **extra
            )
        ),
        "AizkMemoryBlock": lambda: aizk_llama_index.AizkMemoryBlock(
            retriever=index.as_retriever(), **extra
        ),
        "AizkToolEvidenceMemory": lambda: aizk_llama_index.AizkToolEvidenceMemory(
            memory=Memory.from_defaults(), **extra
        ),
    }


NEAR_MISSES = {
    "AizkEvidenceCompressor": ("budjet", "budget"),
    "AizkEvidenceRetriever": ("compresor", "compressor"),
    "langchain.AizkScopedRetriever": ("scopes_kye", "scopes_key"),
    "AizkMemoryMiddleware": ("reserv", "reserve"),
    "AizkToolEvidenceMiddleware": ("window", None),  # it takes no setting to be near
    "AizkEvidencePostprocessor": ("allow_unscopped", "allow_unscoped"),
    "llama_index.AizkScopedRetriever": ("k", "similarity_top_k"),  # LangChain's name for it
    "AizkContextChatEngine": ("system_promt", "system_prompt"),
    "AizkCondensePlusContextChatEngine": ("condense_promt", "condense_prompt"),
    "AizkMemoryBlock": ("prority", "priority"),
    "AizkToolEvidenceMemory": ("memroy", "memory"),
}


@pytest.mark.parametrize("name", list(adapters_built_with({})))
def test_every_adapter_refuses_a_setting_it_does_not_take_by_name(name: str) -> None:
    assert adapters_built_with({})[name]() is not None  # each builds with its own settings
    with pytest.raises((TypeError, ValidationError), match="bogus_setting"):
        adapters_built_with({"bogus_setting": 1})[name]()


@pytest.mark.parametrize("name", list(adapters_built_with({})))
def test_every_adapter_names_the_setting_a_misspelled_one_meant(name: str) -> None:
    typo, meant = NEAR_MISSES[name]
    with pytest.raises((TypeError, ValidationError)) as raised:
        adapters_built_with({typo: 1})[name]()
    said = f"{typo!r} is not a setting of {name.rpartition('.')[2]}"  # or of its from_defaults
    if meant is None:
        assert f"{said}, which takes none" in str(raised.value)
    else:
        assert said in str(raised.value)
        assert f"; did you mean {meant!r}?" in str(raised.value)


def test_the_readmes_misspelled_budget_is_answered_with_the_budget() -> None:
    with pytest.raises(ValidationError) as raised:
        aizk_langchain.AizkEvidenceCompressor(budjet=200)  # type: ignore[call-arg]  # the point
    [error] = raised.value.errors()
    assert error["loc"] == ("budjet",)
    assert error["msg"] == (
        "'budjet' is not a setting of AizkEvidenceCompressor; did you mean 'budget'?"
    )


# LangChain's fallback counter warns before it fails to import transformers: here warnings are
# errors, while a user's run shows the warning and goes on to the ImportError this test reads.
@pytest.mark.filterwarnings("ignore:Using fallback GPT-2 tokenizer:UserWarning")
@pytest.mark.parametrize("framework", ["langchain", "llama_index"])
def test_a_token_counter_that_cannot_load_is_refused_when_the_packer_is_built(
    framework: str,
) -> None:
    model = FakeListChatModel(responses=["x"])  # counts with GPT-2, which needs transformers
    builds: dict[str, Callable[[], object]] = {
        "langchain": lambda: aizk_langchain.AizkEvidenceCompressor.for_model(model),
        "llama_index": lambda: aizk_llama_index.AizkEvidencePostprocessor(
            token_counter=counter_from_langchain(model), budget_covers="block"
        ),
    }
    with pytest.raises(ValidationError) as raised:
        builds[framework]()
    message = str(raised.value)
    assert "Please install it with `pip install transformers`" in message  # not cut short
    assert "count another way that works offline: chars_per_token=" in message
    assert "counter_from_llama_index(tokenizer)" in message
    assert "LlamaIndex's Settings.tokenizer, whose encoding ships with llama-index-core" in message
    assert "tiktoken.get_encoding(...) downloads the encoding on first use" in message


@pytest.mark.parametrize(
    "offline",
    [{"chars_per_token": 3.5}, {"token_counter": counter_from_llama_index(Settings.tokenizer)}],
    ids=["chars_per_token", "Settings.tokenizer"],
)
def test_the_ways_out_the_message_names_count_without_a_network(
    offline: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_network(*args: object, **kwargs: object) -> None:
        raise ConnectionError("offline")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    packer = aizk_langchain.AizkEvidenceCompressor(budget_covers="block", **offline)
    public = Document("The club meets on Thursdays.", metadata=scope_metadata(PUBLIC))
    [block] = packer.compress_documents([public], "club")
    assert "The club meets on Thursdays." in block.page_content


def test_scopes_written_as_several_ids_in_one_string_are_said_to_be_a_list(
    caplog: pytest.LogCaptureFixture,
) -> None:
    packer = aizk_langchain.AizkEvidenceCompressor(reader=ScopeDirectory.for_caller("sam", {}))
    documents = [
        Document("written by other code", metadata={"scopes": "sam,org-team"}),
        Document("not ids at all", metadata={"scopes": {"a": 1}}),
    ]
    with caplog.at_level(logging.WARNING, logger="aizk_integrations"):
        assert packer.compress_documents(documents, "q") == []
    assert (
        "1 item holds under 'scopes' several scope ids in one string (such as 'id1,id2'), "
        "which no reader's scopes match, so they are withheld from every reader: store the "
        "ids as a list, as scope_metadata(['id1', 'id2']) writes them"
    ) in caplog.text
    assert "1 item holds scopes under 'scopes' that cannot be read as scope ids" in caplog.text
    assert "written by other code" not in caplog.text


def test_a_direct_call_is_not_told_a_retriever_sent_other_readers_text(
    caplog: pytest.LogCaptureFixture,
) -> None:
    packer = aizk_langchain.AizkEvidenceCompressor(reader=ScopeDirectory.for_caller("sam", {}))
    documents = [
        Document("Sam's", metadata=scope_metadata("sam")),
        Document("Ana's", metadata=scope_metadata("ana")),
    ]
    with caplog.at_level(logging.WARNING, logger="aizk_integrations"):
        packer.compress_documents(documents, "q")
    assert "a retriever that handed them over had already sent their text" in caplog.text
    assert "the retriever had already" not in caplog.text


def test_a_reader_lost_in_a_compression_retriever_names_both_parts_it_never_reached(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = plain_store()
    store.add_documents([Document("Sam's own note.", metadata=scope_metadata("sam"))])
    bare = ContextualCompressionRetriever(
        base_compressor=aizk_langchain.AizkEvidenceCompressor(),
        base_retriever=aizk_langchain.AizkScopedRetriever(vectorstore=store),
    )
    reader = {"configurable": {"aizk_reader": ScopeDirectory.for_caller("sam", {})}}
    with caplog.at_level(logging.WARNING, logger="aizk_integrations"):
        assert bare.invoke("note", reader) == []  # type: ignore[arg-type]
    assert (
        "LangChain's ContextualCompressionRetriever hands that config to neither its base "
        "retriever nor its compressor: use AizkEvidenceRetriever(base_retriever=..., "
        "compressor=...) in its place, which carries it to both"
    ) in caplog.text


def scoped_store() -> InMemoryVectorStore:
    store = InMemoryVectorStore(embedding=DeterministicFakeEmbedding(size=16))
    store.add_documents([Document("Sam's own note.", metadata=scope_metadata("sam"))])
    return store


def test_a_plain_chain_with_no_reader_is_told_to_name_one_and_nothing_about_other_retrievers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = scoped_store()
    scoped = aizk_langchain.AizkScopedRetriever(vectorstore=store) | (
        aizk_langchain.AizkEvidenceCompressor().as_runnable()
    )
    plain = store.as_retriever() | aizk_langchain.AizkEvidenceCompressor().as_runnable()
    with caplog.at_level(logging.WARNING, logger="aizk_integrations"):
        assert scoped.invoke("note") == ""
        assert plain.invoke("note") == ""
        assert aizk_langchain.AizkScopedRetriever(vectorstore=store).invoke("note") == []
    warnings = [record.getMessage() for record in caplog.records]
    assert len(warnings) == 3
    for warning in warnings:
        assert "pass this request's reader as config={'configurable': {'aizk_reader': reader}}" in (
            warning
        )
        assert "ContextualCompressionRetriever" not in warning


def mistyped_paths() -> dict[str, Any]:
    store = scoped_store()
    packer = aizk_langchain.AizkEvidenceCompressor()
    scoped = aizk_langchain.AizkScopedRetriever(vectorstore=store)
    middleware = aizk_agents.AizkMemoryMiddleware(scoped)
    agent = create_agent(FakeListChatModel(responses=["ok"]), middleware=[middleware])
    return {
        "scoped | packer": lambda config: (scoped | packer.as_runnable()).invoke("note", config),
        "scoped alone": lambda config: scoped.invoke("note", config),
        "scoped alone, async": lambda config: asyncio.run(scoped.ainvoke("note", config)),
        "retriever | packer": lambda config: (store.as_retriever() | packer.as_runnable()).invoke(
            "note", config
        ),
        "AizkEvidenceRetriever": lambda config: aizk_langchain.AizkEvidenceRetriever(
            base_retriever=scoped
        ).invoke("note", config),
        "AizkMemoryMiddleware": lambda config: agent.invoke(
            {"messages": [{"role": "user", "content": "note"}]}, config
        ),
    }


@pytest.mark.parametrize("path", list(mistyped_paths()))
def test_a_misspelled_reader_key_is_the_error_first_and_alone_on_every_path(
    path: str, caplog: pytest.LogCaptureFixture
) -> None:
    sam = ScopeDirectory.for_caller("sam", {})
    with (
        caplog.at_level(logging.WARNING, logger="aizk_integrations"),
        pytest.raises(ValueError, match="aizk_readr") as raised,
    ):
        mistyped_paths()[path]({"configurable": {"aizk_readr": sam}})
    assert str(raised.value) == (
        "configurable 'aizk_readr' is not an aizk setting; did you mean 'aizk_reader'? "
        "(the known keys: 'aizk_reader', 'aizk_budget', 'aizk_room')"
    )
    assert caplog.records == []  # no warning of a missing reader before it
