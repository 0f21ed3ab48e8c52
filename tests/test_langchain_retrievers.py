"""The compressor inside LangChain's own retrieval parts, over a real in-memory vector store."""

from __future__ import annotations

import asyncio

from langchain_classic.retrievers import ContextualCompressionRetriever
from langchain_classic.retrievers.document_compressors import (
    DocumentCompressorPipeline,
    LLMChainFilter,
)
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import FakeListLLM
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore

from aizk_integrations import Scope, ScopeDirectory
from aizk_integrations.langchain import AizkEvidenceCompressor

QUESTION = "When does the book club meet?"
SAM_LINES = (
    "The book club meets on the second Thursday at 19:00.",
    "Sam brings the Piranesi copies to the July meeting.",
    "Draft: the book club might move to Fridays.",
    "Sam prefers morning study blocks.",
)
ANA_SECRET = "Ana's garden gate code is 4417."
UNSCOPED = "A scratch note that no scope vouches for."


def sam_directory() -> ScopeDirectory:
    return ScopeDirectory.for_caller(
        "sam", {"org-book-club": Scope(name="book-club", description="Neighborhood book club")}
    )


def corpus() -> list[Document]:
    return [
        Document(
            page_content=SAM_LINES[0], metadata={"lane": "facts", "scopes": ["org-book-club"]}
        ),
        Document(page_content=SAM_LINES[1], metadata={"lane": "working_memory", "scopes": "sam"}),
        Document(page_content=SAM_LINES[2], metadata={"scopes": ["sam", "org-book-club"]}),
        Document(page_content=SAM_LINES[3], metadata={"lane": "profile", "scopes": ["sam"]}),
        Document(page_content=ANA_SECRET, metadata={"lane": "facts", "scopes": ["ana"]}),
        Document(page_content=UNSCOPED, metadata={"lane": "working_memory"}),
    ]


def retriever() -> BaseRetriever:
    """Every document, in the (deterministic) order the fake embedding ranks them."""
    store = InMemoryVectorStore(embedding=DeterministicFakeEmbedding(size=32))
    store.add_documents(corpus())
    return store.as_retriever(search_kwargs={"k": len(corpus())})


def test_contextual_compression_retrieval_returns_the_compressors_block_for_the_retrieval() -> None:
    base = retriever()
    packer = AizkEvidenceCompressor(directory=sam_directory())
    compressed = ContextualCompressionRetriever(base_compressor=packer, base_retriever=base)

    [block] = compressed.invoke(QUESTION)

    assert [block] == packer.compress_documents(base.invoke(QUESTION), QUESTION)
    assert all(line in block.page_content for line in SAM_LINES)
    assert ANA_SECRET not in block.page_content
    assert UNSCOPED not in block.page_content
    assert block.metadata["aizk_counts"]["withheld"] == 2


def test_async_contextual_compression_retrieval_matches_the_sync_one() -> None:
    packer = AizkEvidenceCompressor(directory=sam_directory(), budget=30)
    compressed = ContextualCompressionRetriever(base_compressor=packer, base_retriever=retriever())
    assert asyncio.run(compressed.ainvoke(QUESTION)) == compressed.invoke(QUESTION)


def test_contextual_compression_can_return_the_kept_documents_for_citations() -> None:
    packer = AizkEvidenceCompressor(directory=sam_directory(), return_documents=True)
    compressed = ContextualCompressionRetriever(base_compressor=packer, base_retriever=retriever())
    kept = compressed.invoke(QUESTION)
    assert sorted(document.page_content for document in kept) == sorted(SAM_LINES)
    assert {document.metadata["provenance"] for document in kept} == {
        "source",
        "derived",
        "session",
    }
    assert all(
        set(document.metadata) == {"provenance", "scope_names", "resource_uri"} for document in kept
    )


def test_in_a_pipeline_the_packer_packs_only_what_the_filter_before_it_kept() -> None:
    base = retriever()
    ranked = base.invoke(QUESTION)
    # The LLM filter answers per document in retrieval order; it rejects the draft.
    verdicts = ["NO" if document.page_content.startswith("Draft") else "YES" for document in ranked]
    relevance = LLMChainFilter.from_llm(FakeListLLM(responses=verdicts))
    pipeline = DocumentCompressorPipeline(
        transformers=[relevance, AizkEvidenceCompressor(directory=sam_directory())]
    )
    compressed = ContextualCompressionRetriever(base_compressor=pipeline, base_retriever=base)

    [block] = compressed.invoke(QUESTION)

    assert SAM_LINES[2] not in block.page_content
    assert all(line in block.page_content for line in SAM_LINES if line != SAM_LINES[2])
    assert ANA_SECRET not in block.page_content
    assert block.metadata["aizk_counts"]["kept"] == 3


def test_a_retrieval_that_finds_nothing_gives_no_documents() -> None:
    store = InMemoryVectorStore(embedding=DeterministicFakeEmbedding(size=32))
    compressed = ContextualCompressionRetriever(
        base_compressor=AizkEvidenceCompressor(directory=sam_directory()),
        base_retriever=store.as_retriever(),
    )
    assert compressed.invoke(QUESTION) == []


def test_a_retrieval_the_reader_may_see_none_of_gives_no_documents() -> None:
    kenji = ScopeDirectory.for_caller("kenji", {})
    compressed = ContextualCompressionRetriever(
        base_compressor=AizkEvidenceCompressor(directory=kenji), base_retriever=retriever()
    )
    assert compressed.invoke(QUESTION) == []
