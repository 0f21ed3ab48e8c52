"""`budget_covers="block"` through the shared settings and both adapters' public entry points."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from llama_index.core.schema import NodeWithScore, TextNode
from pydantic import ValidationError

from aizk_integrations import BudgetCovers, Scope, ScopeDirectory
from aizk_integrations.counters import counter_from_tiktoken
from aizk_integrations.langchain import AizkEvidenceCompressor
from aizk_integrations.llama_index import AizkEvidencePostprocessor
from aizk_integrations.packer import PackingSettings
from tests.offline_tokenizers import cl100k

READER = ScopeDirectory.for_caller(
    "sam", {"org-club": Scope(name="book-club", description="Neighborhood book club, Kawasaki")}
)
TEXTS = [
    "The book club meets on the second Thursday of the month at 19:00 in the library annex.",
    "Sam prefers morning study blocks and keeps Friday afternoons free for reading.",
    "The reranker sidecar is back up on port 8004 after the driver update on Tuesday.",
    "Week three targets the reranker ablation and the fused-lane sweep across all lanes.",
    "Ana is hosting the next meeting; bring the second half of the novel, annotated.",
    "The budget packer keeps a prefix in merit order and never trims an item it keeps.",
]
METADATA = [
    {"lane": "facts", "scopes": ["org-club", "sam"]},
    {"lane": "profile", "scopes": ["sam"]},
    {"lane": "working_memory", "scopes": ["sam"]},
    {"lane": "sources", "scopes": ["sam", "org-club"]},
    {"lane": "facts", "scopes": ["org-club"]},
    {"lane": "sources", "scopes": ["sam"]},
]
BUDGET = 120


def tokens(text: str) -> int:
    return len(cl100k().encode(text, disallowed_special=()))


def documents() -> list[Document]:
    return [Document(text, metadata=dict(meta)) for text, meta in zip(TEXTS, METADATA, strict=True)]


def nodes() -> list[NodeWithScore]:
    return [
        NodeWithScore(node=TextNode(text=text, metadata=dict(meta)), score=1.0)
        for text, meta in zip(TEXTS, METADATA, strict=True)
    ]


def compressor(covers: str) -> AizkEvidenceCompressor:
    return AizkEvidenceCompressor(
        budget=BUDGET,
        directory=READER,
        budget_covers=covers,
        token_counter=counter_from_tiktoken(cl100k()),
    )


def postprocessor(covers: str) -> AizkEvidencePostprocessor:
    return AizkEvidencePostprocessor(
        budget=BUDGET,
        directory=READER,
        budget_covers=covers,
        token_counter=counter_from_tiktoken(cl100k()),
    )


def test_the_langchain_block_fits_in_real_tokens_where_the_lines_rule_overflows() -> None:
    (by_lines,) = compressor("lines").compress_documents(documents(), "when do we meet?")
    (by_block,) = compressor("block").compress_documents(documents(), "when do we meet?")
    assert tokens(by_lines.page_content) > BUDGET
    assert tokens(by_block.page_content) <= BUDGET
    assert by_block.metadata["aizk_counts"]["tokens_used"] == tokens(by_block.page_content)
    kept = by_block.metadata["aizk_counts"]["kept"]
    assert 0 < kept < by_lines.metadata["aizk_counts"]["kept"]
    assert [item["text"] for item in by_block.metadata["aizk_recall"]["evidence"]] == TEXTS[:kept]


def test_the_llama_index_block_fits_in_real_tokens_where_the_lines_rule_overflows() -> None:
    (by_lines,) = postprocessor("lines").postprocess_nodes(nodes(), query_str="when do we meet?")
    (by_block,) = postprocessor("block").postprocess_nodes(nodes(), query_str="when do we meet?")
    assert tokens(by_lines.node.get_content()) > BUDGET
    block = by_block.node.get_content()
    assert tokens(block) <= BUDGET
    kept = by_block.node.metadata["aizk_counts"]["kept"]
    assert 0 < kept < by_lines.node.metadata["aizk_counts"]["kept"]
    assert block.count("\n- **") == kept


def test_the_shared_settings_count_what_was_withheld_read_and_cut_in_block_mode() -> None:
    items = [*zip(TEXTS, METADATA, strict=True), ("not ours", {"scopes": ["org-other"]})]
    settings = PackingSettings(directory=READER, budget=BUDGET, budget_covers="block")
    outcome = settings.pack_items(iter(items[::-1]), len(items), str)
    # Reversed, the unreadable item comes first: withheld before a single token is counted.
    assert outcome.withheld == 1
    assert outcome.counts["kept"] + outcome.cut + outcome.withheld == len(items)
    assert outcome.kept_positions == tuple(range(1, 1 + outcome.counts["kept"]))
    assert outcome.tokens_used == -(-len(outcome.result.to_markdown()) // 4)
    assert "drop, over budget" in outcome.table()


def test_the_lines_rule_stays_the_default() -> None:
    assert PackingSettings().budget_covers is BudgetCovers.LINES


def test_an_unknown_budget_mode_is_refused_when_the_adapter_is_built() -> None:
    with pytest.raises(ValidationError, match="budget_covers"):
        AizkEvidenceCompressor(budget_covers="everything")
    with pytest.raises(ValidationError, match="budget_covers"):
        AizkEvidencePostprocessor(budget_covers="everything")
