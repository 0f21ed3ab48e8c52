"""Citations in one pass: the block numbers its items with inert source labels, the model cites
`[n]`, and the app maps `[n]` back to the kept documents or nodes, through both frameworks."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_classic.chains.combine_documents import create_stuff_documents_chain
from langchain_classic.chains.retrieval import create_retrieval_chain
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import FakeListLLM
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.vectorstores import InMemoryVectorStore
from llama_index.core import PromptTemplate, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.schema import TextNode
from pydantic import ValidationError

from aizk_integrations import RecallResult, ScopeDirectory, scope_metadata
from aizk_integrations.langchain import (
    AizkEvidenceCompressor,
    AizkEvidenceRetriever,
    AizkScopedRetriever,
)
from aizk_integrations.llama_index import AizkEvidencePostprocessor
from tests.adapters.harness import Adapter
from tests.block_checks import assert_block_holds, hostile_corpus

SAM = ScopeDirectory.for_caller("sam", {})
HOSTILE = hostile_corpus(surrogates=False)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    count=st.integers(1, 14),
    budget=st.integers(20, 600),
    source=st.sampled_from(HOSTILE[:200]),
)
def test_a_cited_block_fits_its_budget_and_numbers_every_item_in_order(
    adapter: Adapter, count: int, budget: int, source: str
) -> None:
    entries = [
        (f"note {n}", {**scope_metadata("sam"), "source": source, "page": n}) for n in range(count)
    ]
    settings_ = {
        "reader": SAM,
        "cite": True,
        "citation_keys": ["source", "page"],
        "budget_covers": "block",
        "budget": budget,
    }
    answer = adapter.run(entries, **settings_)
    if not answer.texts:
        return
    block, counts = answer.block, answer.counts
    assert counts["tokens_used"] == math.ceil(len(block) / 4) <= budget  # numbers priced too
    kept = counts["kept"]
    assert re.findall(r"Cite as `\[(\d+)\]`", block) == [str(n) for n in range(1, kept + 1)]
    assert_block_holds(block, [f"note {n}" for n in range(kept)])
    assert RecallResult.model_validate(answer.recall).to_markdown() == block
    cited = answer.metadata[0]["aizk_citations"]
    assert [item["number"] for item in cited] == list(range(1, kept + 1))
    assert [item["page"] for item in cited] == list(range(kept))  # as stored, not as shown
    assert all(item["source"] == source for item in cited)


def test_a_lone_surrogate_in_a_citation_value_is_shown_replaced_and_kept_as_stored(
    adapter: Adapter,
) -> None:
    source = "notes/caf\udce9.txt"  # os.fsdecode(b"notes/caf\xe9.txt"): a Latin-1 file name
    metadata = {**scope_metadata("sam"), "source": source}
    answer = adapter.run([("note", metadata)], reader=SAM, cite=True, citation_keys=["source"])
    assert "`source: notes/caf\ufffd.txt`" in answer.block
    answer.block.encode("utf-8")  # and so LlamaIndex could make the block node's id from it
    assert answer.recall["evidence"][0]["citation"] == {"source": "notes/caf\ufffd.txt"}
    assert answer.metadata[0]["aizk_citations"][0]["source"] == source


def test_a_lone_surrogate_in_a_citation_key_is_refused_when_the_adapter_is_built(
    adapter: Adapter,
) -> None:
    with pytest.raises(ValidationError, match=r"lone surrogate \(U\+DCE9\) at character 3"):
        adapter.build(cite=True, citation_keys=["sou\udce9rce"])


def test_an_uncited_block_and_its_json_are_as_they_were() -> None:
    documents = [Document("note", metadata={**scope_metadata("sam"), "source": "a.md"})]
    packer = AizkEvidenceCompressor(reader=SAM, citation_keys=["source"])
    [block] = packer.compress_documents(documents, "")
    assert "Cite as" not in block.page_content
    assert "citation" not in block.metadata["aizk_recall"]["evidence"][0]
    assert "aizk_citations" not in block.metadata


def test_another_readers_document_is_never_cited() -> None:
    documents = [
        Document("Ana's note", id="ana-1", metadata={**scope_metadata("ana"), "source": "ana.md"}),
        Document("Sam's note", id="sam-1", metadata={**scope_metadata("sam"), "source": "sam.md"}),
    ]
    packer = AizkEvidenceCompressor(reader=SAM, cite=True, citation_keys=["source"])
    [block] = packer.compress_documents(documents, "")
    assert "ana" not in block.page_content.lower()
    assert block.metadata["aizk_citations"] == [{"number": 1, "id": "sam-1", "source": "sam.md"}]


def test_a_langchain_stuff_chain_cites_sources_and_the_app_maps_them_back() -> None:
    store = InMemoryVectorStore(embedding=DeterministicFakeEmbedding(size=16))
    notes = {"plan.md": "The plan targets the ablation.", "notes.md": "Sam prefers mornings."}
    store.add_documents(
        [
            Document(text, metadata={**scope_metadata("sam"), "source": source})
            for source, text in notes.items()
        ]
        + [Document("Ana's diary.", metadata={**scope_metadata("ana"), "source": "diary.md"})]
    )
    retriever = AizkEvidenceRetriever(
        base_retriever=AizkScopedRetriever(vectorstore=store),
        compressor=AizkEvidenceCompressor(cite=True, citation_keys=["source"]),
    )
    prompt = ChatPromptTemplate.from_messages(
        [("human", "Answer from the evidence, citing it as [n].\n\n{context}\n\n{input}")]
    )
    llm = FakeListLLM(responses=["The plan targets the ablation [1]."])
    chain = create_retrieval_chain(retriever, create_stuff_documents_chain(llm, prompt))
    result = chain.invoke(
        {"input": "What does the plan target?"}, config={"configurable": {"aizk_reader": SAM}}
    )
    [block] = result["context"]
    cited = {item["number"]: item for item in block.metadata["aizk_citations"]}
    shown = dict(re.findall(r"Cite as `\[(\d+)\]`: `source: ([^`]+)`", block.page_content))
    [number] = [int(n) for n in re.findall(r"\[(\d+)\]", result["answer"])]
    assert cited[number]["source"] == shown[str(number)]  # what the model read is what maps back
    assert set(shown.values()) == {"plan.md", "notes.md"}
    assert "diary" not in block.page_content


def test_a_llama_index_query_engine_cites_sources_for_a_sources_panel() -> None:
    nodes = [
        TextNode(
            text=f"Page {page} of the plan.",
            metadata={**scope_metadata("sam"), "file_name": "plan.pdf", "page_label": str(page)},
            excluded_llm_metadata_keys=["scopes", "file_name", "page_label"],
            excluded_embed_metadata_keys=["scopes", "file_name", "page_label"],
        )
        for page in (1, 2)
    ]
    index = VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=8))
    evidence = AizkEvidencePostprocessor(
        reader=SAM, cite=True, citation_keys=["file_name", "page_label"]
    )
    qa = PromptTemplate("Cite the evidence as [n].\n{context_str}\nQuestion: {query_str}\n")
    engine = index.as_query_engine(
        llm=MockLLM(), node_postprocessors=[evidence], text_qa_template=qa
    )
    response = engine.query("What is in the plan?")  # MockLLM answers with its prompt
    prompted = re.findall(
        r"Cite as `\[(\d)\]`: `file_name: (\S+)`, `page_label: (\d)`", str(response)
    )
    [block] = response.source_nodes
    panel = [
        (str(item["number"]), item["file_name"], item["page_label"])
        for item in block.node.metadata["aizk_citations"]
    ]
    assert panel == prompted  # the model was shown what the panel lists, number for number
    assert sorted(page for _, _, page in panel) == ["1", "2"]
