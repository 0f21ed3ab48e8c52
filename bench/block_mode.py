"""What a whole-block budget costs next to the seed's lines-only budget, as ratios (issue 7).

Both modes pack the same corpus in the same process: 100 retrieved items of 20-150 words, all in
the reader's two scopes, budget 2048. Calls are timed in interleaved samples (lines, block,
block, lines, ...) so background load hits both alike, and the medians are compared. The goal
is guard 6 of `bench/run.py`, block / lines <= 2.0 on what a chain pays, the compressor's
`compress_documents` with the default counter. The other rows are information: packing alone
on pre-built candidates (`pack` then `RecallResult.from_candidates` against `pack_block`, both
giving a `RecallResult`), the postprocessor through LlamaIndex's span, and the rows with a real
tokenizer, where the tokenizer, not the packer, is most of the time.

    python bench/block_mode.py            # full run
    python bench/block_mode.py --quick    # a few samples, to keep the script from rotting (CI)

It prints the table and exits 0 either way: it is a measurement, not a test.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable, Sequence

from langchain_core.documents import Document
from llama_index.core.schema import NodeWithScore, TextNode
from llama_index.core.utils import get_tokenizer
from run import BLOCK_GOAL, BUDGET, RETRIEVED, corpus, measure, reader_directory  # bench/run.py

from aizk_integrations import (
    Candidate,
    RecallResult,
    ScopeDirectory,
    pack,
    pack_block,
)
from aizk_integrations._core.pricing import BudgetCovers
from aizk_integrations._tokens import TokenCounter
from aizk_integrations.counters import counter_from_llama_index
from aizk_integrations.langchain import AizkEvidenceCompressor
from aizk_integrations.llama_index import AizkEvidencePostprocessor

SEED = 7
GOAL = BLOCK_GOAL  # guard 6, as bench/run.py states it

Call = Callable[[], object]


def packing_alone(
    candidates: list[Candidate], directory: ScopeDirectory, counter: TokenCounter | None
) -> tuple[Call, Call]:
    """The public core on pre-built candidates: a `RecallResult` by each mode, not rendered."""

    def by_lines() -> RecallResult:
        kept = pack(candidates, BUDGET, token_counter=counter)
        return RecallResult.from_candidates(kept, directory)

    def by_block() -> RecallResult:
        return pack_block(candidates, BUDGET, directory, token_counter=counter)

    return by_lines, by_block


def compressors(
    documents: list[Document], directory: ScopeDirectory, counter: TokenCounter | None
) -> tuple[Call, Call]:
    """What a LangChain chain pays: `compress_documents`, block rendered, in each mode."""

    def call(covers: BudgetCovers) -> Call:
        compressor = AizkEvidenceCompressor(
            budget=BUDGET, reader=directory, budget_covers=covers, token_counter=counter
        )
        return lambda: compressor.compress_documents(documents, "q")

    return call("lines"), call("block")


def postprocessors(nodes: list[NodeWithScore], directory: ScopeDirectory) -> tuple[Call, Call]:
    """What a LlamaIndex query pays: `postprocess_nodes`, through the span, in each mode."""

    def call(covers: BudgetCovers) -> Call:
        postprocessor = AizkEvidencePostprocessor(
            budget=BUDGET, reader=directory, budget_covers=covers
        )
        return lambda: postprocessor.postprocess_nodes(nodes, query_str="q")

    return call("lines"), call("block")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="few samples; for CI")
    args = parser.parse_args(argv)
    samples, target = (5, 0.002) if args.quick else (201, 0.01)

    items = corpus(random.Random(SEED))
    directory = reader_directory()
    candidates = [Candidate.model_validate({**metadata, "line": text}) for text, metadata in items]
    documents = [Document(page_content=text, metadata=metadata) for text, metadata in items]
    nodes = [
        NodeWithScore(node=TextNode(id_=f"node-{index}", text=text, metadata=metadata))
        for index, (text, metadata) in enumerate(items)
    ]
    # LlamaIndex's default tokenizer (tiktoken cl100k_base), loaded from the copy it ships.
    cl100k = counter_from_llama_index(get_tokenizer())

    rows: list[tuple[str, tuple[Call, Call], bool]] = [
        ("compress_documents, default", compressors(documents, directory, None), True),
        ("postprocess_nodes, default", postprocessors(nodes, directory), False),
        ("packing alone, default", packing_alone(candidates, directory, None), False),
        ("compress_documents, cl100k", compressors(documents, directory, cl100k), False),
        ("packing alone, cl100k", packing_alone(candidates, directory, cl100k), False),
    ]
    kept_by_lines = len(pack(candidates, BUDGET))
    kept_by_block = len(pack_block(candidates, BUDGET, directory).evidence)
    print(
        f"{RETRIEVED} items of 20-150 words (seed {SEED}), budget {BUDGET}: lines keeps "
        f"{kept_by_lines}, block keeps {kept_by_block} (default counter); "
        f"{samples} samples per side" + (" (quick mode)" if args.quick else "")
    )
    print()
    width = max(len(label) for label, _, _ in rows)
    goal = f"goal <= {GOAL}"
    print(f"| {'call':<{width}} | lines µs | block µs | block / lines | {goal} |")
    print(f"|{'-' * (width + 2)}|---------:|---------:|--------------:|{'-' * (len(goal) + 2)}|")
    for label, (lines, block), gated in rows:
        medians = measure({"lines": lines, "block": block}, samples, target)
        ratio = medians["block"] / medians["lines"]
        verdict = ("yes" if ratio <= GOAL else "NO") if gated else "info"
        print(
            f"| {label:<{width}} | {medians['lines'] * 1e6:8.1f} | {medians['block'] * 1e6:8.1f} "
            f"| {ratio:13.2f} | {verdict:<{len(goal)}} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
