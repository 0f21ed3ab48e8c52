"""LangChain's own standard retriever tests, run against `AizkEvidenceRetriever`.

With `return_documents=True` the retriever returns the kept documents, so the number asked for
(`k`, passed to the wrapped retriever) is the number that comes back when the budget allows.
In block mode it returns one block document whatever `k` is: the two `k` tests below would fail
there by design, which docs/langchain.md says.
"""

from __future__ import annotations

from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_tests.integration_tests import RetrieversIntegrationTests

from aizk_integrations import ScopeDirectory
from aizk_integrations.langchain import AizkEvidenceCompressor, AizkEvidenceRetriever

SAM = ScopeDirectory.for_caller("sam", {})


def packed_retriever(k: int = 4) -> AizkEvidenceRetriever:
    """Sam's notes in a vector store, `k` at a time, packed for Sam into kept documents."""
    store = InMemoryVectorStore(embedding=DeterministicFakeEmbedding(size=16))
    store.add_documents(
        [
            Document(f"Sam's note {n} on the reranker.", metadata={"scopes": ["sam"]})
            for n in range(8)
        ]
    )
    return AizkEvidenceRetriever(
        base_retriever=store.as_retriever(search_kwargs={"k": k}),
        compressor=AizkEvidenceCompressor(reader=SAM, return_documents=True),
    )


class TestAizkEvidenceRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        constructor: Any = packed_retriever  # the suite calls it with its params, as a class
        return constructor  # type: ignore[no-any-return]

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"k": 4}

    @property
    def retriever_query_example(self) -> str:
        return "reranker notes"


def test_block_mode_returns_one_block_whatever_k_is() -> None:
    block_mode = packed_retriever(k=3)
    packer = block_mode.compressor.model_copy(update={"return_documents": False})
    one_block = AizkEvidenceRetriever(base_retriever=block_mode.base_retriever, compressor=packer)
    for k in (1, 3):
        [block] = one_block.invoke("reranker notes", k=k)
        assert block.metadata["aizk_counts"]["kept"] == k
