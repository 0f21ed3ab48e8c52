"""The packer keeps a prefix in merit order, so what reorders or filters around it must not pass
silently: through LlamaIndex's real `LongContextReorder` and `SimilarityPostprocessor` and a
real query engine, and through LangChain documents a reranker scored."""

from __future__ import annotations

import logging

import pytest
from langchain_core.documents import Document
from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.postprocessor import LongContextReorder, SimilarityPostprocessor
from llama_index.core.schema import NodeWithScore, TextNode

from aizk_integrations import ScopeDirectory, scope_metadata
from aizk_integrations.langchain import AizkEvidenceCompressor
from aizk_integrations.llama_index import AizkEvidencePostprocessor

SAM = ScopeDirectory.for_caller("sam", {})


def ranked(count: int) -> list[NodeWithScore]:
    return [
        NodeWithScore(
            node=TextNode(text=f"Sam's note {rank}.", metadata=scope_metadata("sam")),
            score=1.0 - rank / 100,
        )
        for rank in range(count)
    ]


def test_nodes_reordered_before_the_packer_are_a_warning_that_names_the_fix(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reordered = LongContextReorder().postprocess_nodes(ranked(10), query_str="q")
    with caplog.at_level(logging.WARNING, logger="aizk_integrations"):
        AizkEvidencePostprocessor(reader=SAM, budget=30).postprocess_nodes(reordered)
    [warning] = [r.getMessage() for r in caplog.records if "merit order" in r.getMessage()]
    assert "such as LongContextReorder" in warning
    assert "put the packer right after the retriever or reranker" in warning


def test_nodes_in_merit_order_are_no_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="aizk_integrations"):
        AizkEvidencePostprocessor(reader=SAM, budget=30).postprocess_nodes(ranked(10))
    assert not caplog.records


def test_a_score_filter_after_the_packer_keeps_the_block_its_best_item_passes() -> None:
    nodes = [TextNode(text=f"Sam's note {n}.", metadata=scope_metadata("sam")) for n in range(4)]
    index = VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=8))  # every score 1.0
    engine = index.as_query_engine(
        llm=MockLLM(),
        similarity_top_k=4,
        node_postprocessors=[
            AizkEvidencePostprocessor(reader=SAM),
            SimilarityPostprocessor(similarity_cutoff=0.5),
        ],
    )
    response = engine.query("notes?")
    [block] = response.source_nodes
    assert "Sam's note 0." in block.node.get_content()
    assert str(response) != "Empty Response"


def test_documents_a_reranker_scored_out_of_order_are_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    documents = [
        Document(f"note {n}", metadata={**scope_metadata("sam"), "relevance_score": score})
        for n, score in enumerate([0.2, 0.9, 0.5])  # up, then down: reordered
    ]
    with caplog.at_level(logging.WARNING, logger="aizk_integrations"):
        AizkEvidenceCompressor(reader=SAM).compress_documents(documents, "q")
    [warning] = [r.getMessage() for r in caplog.records if "merit order" in r.getMessage()]
    assert "item 3 scores 0.5, against the order of the items before it (item 2" in warning


def test_distances_ranked_lowest_first_are_merit_order_too(
    caplog: pytest.LogCaptureFixture,
) -> None:
    nodes = ranked(6)
    for rank, scored in enumerate(nodes):
        scored.score = 0.1 * rank  # a distance: the best is the smallest
    with caplog.at_level(logging.WARNING, logger="aizk_integrations"):
        [block] = AizkEvidencePostprocessor(reader=SAM).postprocess_nodes(nodes)
    assert not caplog.records
    assert block.score == 0.0  # the first item's, the best
