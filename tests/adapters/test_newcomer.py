"""A newcomer's first hour: plain documents, settings and messages, each ending in its fix.

Every message a first run meets names what to write, whole: the setting that shows a corpus
named no scope, the key of a setting an adapter does not take, the package a token counter is
missing, the list that scopes written as one string should be.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from langchain_classic.retrievers import ContextualCompressionRetriever
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import FakeListChatModel
from langchain_core.vectorstores import InMemoryVectorStore
from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.memory import Memory
from llama_index.core.schema import TextNode
from pydantic import ValidationError

from aizk_integrations import PUBLIC, EvidenceError, ScopeDirectory, scope_metadata
from aizk_integrations import langchain as aizk_langchain
from aizk_integrations import langchain_agents as aizk_agents
from aizk_integrations import llama_index as aizk_llama_index

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


@pytest.mark.parametrize("name", list(adapters_built_with({})))
def test_every_adapter_refuses_a_setting_it_does_not_take_by_name(name: str) -> None:
    assert adapters_built_with({})[name]() is not None  # each builds with its own settings
    with pytest.raises((TypeError, ValidationError), match="bogus_setting"):
        adapters_built_with({"bogus_setting": 1})[name]()


# LangChain's fallback counter warns before it fails to import transformers: here warnings are
# errors, while a user's run shows the warning and goes on to the ImportError this test reads.
@pytest.mark.filterwarnings("ignore:Using fallback GPT-2 tokenizer:UserWarning")
def test_a_token_counter_missing_its_package_is_said_whole_with_the_ways_out() -> None:
    packer = aizk_langchain.AizkEvidenceCompressor.for_model(FakeListChatModel(responses=["x"]))
    public = Document("The club meets on Thursdays.", metadata=scope_metadata(PUBLIC))
    with pytest.raises(EvidenceError) as raised:
        packer.compress_documents([public], "club")
    message = str(raised.value)
    assert "Please install it with `pip install transformers`" in message  # not cut short
    assert "token_counter= one of aizk_integrations.counters" in message
    assert "chars_per_token=" in message


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
        "1 item holds under 'scopes' several scope ids in one string (such as "
        "'sam,org-team'), which no reader's scopes match, so they are withheld from every "
        "reader: store the ids as a list, as scope_metadata(['sam', 'org-team']) writes them"
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
