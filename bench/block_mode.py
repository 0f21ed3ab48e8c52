"""What a whole-block budget costs next to the seed's lines-only budget, as ratios (issue 7).

Both modes pack the same corpus in the same process: 100 retrieved items of 20-150 words, all in
the reader's two scopes, budget 2048. Calls are timed in interleaved samples (lines, block,
block, lines, ...) so background load hits both alike, and the medians are compared. The goal
is block / lines <= 1.5 with the default counter; the rows with a real tokenizer are reported
for information, since there the tokenizer, not the packer, is most of the time.

    python bench/block_mode.py            # full run
    python bench/block_mode.py --quick    # a few samples, to keep the script from rotting (CI)

It prints the table and exits 0 either way: it is a measurement, not a test.
"""

from __future__ import annotations

import argparse
import random
import statistics
from collections.abc import Callable, Sequence

from langchain_core.documents import Document
from llama_index.core.utils import get_tokenizer
from run import BUDGET, ORGANIZATION, READER, RETRIEVED, corpus, sample  # bench/run.py's corpus

from aizk_integrations import BudgetCovers, Scope, ScopeDirectory, TokenCounter
from aizk_integrations.counters import counter_from_llama_index
from aizk_integrations.langchain import AizkEvidenceCompressor
from aizk_integrations.packer import PackingSettings

SEED = 7
GOAL = 1.5


def medians(
    lines: Callable[[], object], block: Callable[[], object], samples: int, target: float
) -> tuple[float, float]:
    """Median seconds per call of each, sampled alternately so both share the same conditions."""
    lines()
    block()  # warm caches: template compile, pydantic validators, lazy imports
    loops = max(1, round(target / max(min(sample(lines, 1) for _ in range(5)), 1e-7)))
    times: tuple[list[float], list[float]] = ([], [])
    for index in range(samples):
        order = (0, 1) if index % 2 == 0 else (1, 0)
        for side in order:
            times[side].append(sample((lines, block)[side], loops))
    return statistics.median(times[0]), statistics.median(times[1])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="few samples; for CI")
    args = parser.parse_args(argv)
    samples, target = (5, 0.002) if args.quick else (201, 0.01)

    items = corpus(random.Random(SEED))
    directory = ScopeDirectory.for_caller(
        READER, {ORGANIZATION: Scope(name="reading-group", description="Tuesday reading group")}
    )
    documents = [Document(page_content=text, metadata=metadata) for text, metadata in items]
    # LlamaIndex's default tokenizer (tiktoken cl100k_base), loaded from the copy it ships.
    cl100k = counter_from_llama_index(get_tokenizer())

    def packer(covers: BudgetCovers, counter: TokenCounter | None) -> Callable[[], object]:
        settings = PackingSettings(
            budget=BUDGET, directory=directory, budget_covers=covers, token_counter=counter
        )
        return lambda: settings.pack_items(iter(items), len(items), str)

    def compressor(covers: BudgetCovers) -> Callable[[], object]:
        adapter = AizkEvidenceCompressor(budget=BUDGET, directory=directory, budget_covers=covers)
        return lambda: adapter.compress_documents(documents, "q")

    each_line, whole = BudgetCovers.LINES, BudgetCovers.BLOCK
    rows = [
        ("pack_items, default counter", packer(each_line, None), packer(whole, None), True),
        ("compress_documents (renders)", compressor(each_line), compressor(whole), True),
        ("pack_items, cl100k counter", packer(each_line, cl100k), packer(whole, cl100k), False),
    ]
    print(f"{RETRIEVED} items of 20-150 words, budget {BUDGET}, {samples} samples per side")
    print(f"{'call':<30} {'lines':>10} {'block':>10} {'ratio':>7}  goal <= {GOAL}")
    for label, lines, block, gated in rows:
        by_lines, by_block = medians(lines, block, samples, target)
        ratio = by_block / by_lines
        verdict = ("pass" if ratio <= GOAL else "FAIL") if gated else "(info)"
        print(
            f"{label:<30} {by_lines * 1e6:>8.0f}us {by_block * 1e6:>8.0f}us "
            f"{ratio:>7.2f}  {verdict}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
