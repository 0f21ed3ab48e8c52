"""What packing costs next to what a chain already runs, as ratios measured in one process.

Absolute times depend on the machine; ratios against the framework's own context assembly, run
side by side on the same corpus in the same process, mostly do not. Each pair is timed
interleaved (A, B, A, B, ...), so a colleague's test run or a CPU frequency change hits both
sides alike, and the medians of many samples are compared.

    python bench/run.py            # full run: the table in README's Performance section
    python bench/run.py --quick    # a few samples, to keep the script from rotting (CI)

The goals come from issue 8; the script prints pass/fail for each and exits 0 either way,
because it is a measurement, not a test.
"""

from __future__ import annotations

import argparse
import gc
import inspect
import platform
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

from langchain_core.documents import Document
from langchain_core.prompts import PromptTemplate, format_document
from llama_index.core.postprocessor import LongContextReorder
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode

from aizk_integrations import Candidate, RecallResult, Scope, ScopeDirectory, pack
from aizk_integrations.langchain import AizkEvidenceCompressor
from aizk_integrations.llama_index import AizkEvidencePostprocessor

SEED = 8
RETRIEVED = 100
REPEATED = 100_000
BUDGET = 2048
READER = "reader-7f3a"
ORGANIZATION = "org-reading-group"
LANES = ("sources", "working_memory", "facts", "profile", "communities", "overview")
VOCABULARY = (
    "reranker ablation sweep fused lane retrieval plan budget token evidence scope session "
    "memory profile community overview artifact revision quarter target study block morning "
    "review notes draft chapter summary meeting agenda owner deadline metric baseline recall "
    "precision latency index shard replica embedding cosine score rank window prompt context"
)
WORDS = VOCABULARY.split()


def corpus(rng: random.Random) -> list[tuple[str, dict[str, object]]]:
    """100 retrieved items of 20-150 words, every one in both of the reader's scopes."""
    items = []
    for _ in range(RETRIEVED):
        words = [rng.choice(WORDS) for _ in range(rng.randint(20, 150))]
        # A few line breaks, as real excerpts have, so indenting does real work.
        for position in range(12, len(words), rng.randint(12, 40)):
            words[position] += "\n"
        text = " ".join(words).replace("\n ", "\n")
        metadata: dict[str, object] = {
            "lane": rng.choice(LANES),
            "scopes": [READER, ORGANIZATION],
            "artifact_id": str(UUID(int=rng.getrandbits(128), version=4)),
            "artifact_content_id": str(UUID(int=rng.getrandbits(128), version=4)),
        }
        items.append((text, metadata))
    return items


class PassThrough(BaseNodePostprocessor):
    """A postprocessor that does nothing: what LlamaIndex's own per-call span costs alone.

    Every postprocessor's `_postprocess_nodes` runs inside an instrumentation span (so tracing
    tools see it); this one measures that span with no work inside it.
    """

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: object = None
    ) -> list[NodeWithScore]:
        return nodes


@dataclass(frozen=True)
class Pair:
    """Two timed calls, their ratio and the goal it should meet."""

    label: str
    ours: str
    theirs: str
    goal: float


def sample(call: Callable[[], object], loops: int) -> float:
    """Seconds per call, averaged over `loops` back-to-back calls."""
    start = time.perf_counter()
    for _ in range(loops):
        call()
    return (time.perf_counter() - start) / loops


def loops_for(call: Callable[[], object], target: float) -> int:
    """How many calls make a sample of about `target` seconds (timer resolution is not free)."""
    once = min(sample(call, 1) for _ in range(5))
    return max(1, round(target / max(once, 1e-7)))


def measure(
    calls: dict[str, Callable[[], object]], samples: int, target: float
) -> dict[str, float]:
    """Median seconds per call of each, sampled in turn so all share the same conditions."""
    for call in calls.values():
        call()  # warm caches: template compile, pydantic validators, lazy imports
    loops = {name: loops_for(call, target) for name, call in calls.items()}
    times: dict[str, list[float]] = {name: [] for name in calls}
    names = list(calls)
    for index in range(samples):
        # Alternate the order too, so neither side always runs right after the other.
        for name in names if index % 2 == 0 else reversed(names):
            times[name].append(sample(calls[name], loops[name]))
    return {name: statistics.median(values) for name, values in times.items()}


def peak_memory(call: Callable[[], object]) -> int:
    """Bytes allocated at the peak of one call, above what was live before it."""
    call()
    gc.collect()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        result = call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del result
    return peak - before


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="few samples; for CI")
    parser.add_argument("--samples", type=int, default=None, help="samples per call")
    args = parser.parse_args(argv)
    samples = args.samples or (5 if args.quick else 201)
    target = 0.002 if args.quick else 0.01

    items = corpus(random.Random(SEED))
    directory = ScopeDirectory.for_caller(
        READER, {ORGANIZATION: Scope(name="reading-group", description="Tuesday reading group")}
    )
    documents = [
        Document(id=f"doc-{index}", page_content=text, metadata=metadata)
        for index, (text, metadata) in enumerate(items)
    ]
    many_documents = documents * (REPEATED // RETRIEVED)
    nodes = [
        NodeWithScore(
            node=TextNode(id_=f"node-{index}", text=text, metadata=metadata),
            score=1.0 - index / RETRIEVED,
        )
        for index, (text, metadata) in enumerate(items)
    ]
    candidates = [Candidate.model_validate({**metadata, "line": text}) for text, metadata in items]

    compressor = AizkEvidenceCompressor(budget=BUDGET, directory=directory)
    postprocessor = AizkEvidencePostprocessor(budget=BUDGET, directory=directory)
    reorder = LongContextReorder()
    pass_through = PassThrough()
    # The same method with LlamaIndex's span wrapper peeled off: what the adapter's own code
    # costs. For reference only; every real call goes through the span.
    own_code = inspect.unwrap(AizkEvidencePostprocessor._postprocess_nodes)
    query = QueryBundle("q")
    if own_code(postprocessor, nodes, query) != postprocessor.postprocess_nodes(nodes, query):
        raise SystemExit("the span-bypassed call must return what the real call returns")
    prompt = PromptTemplate.from_template("{page_content}")

    calls: dict[str, Callable[[], object]] = {
        "aizk compressor, 100 docs": lambda: compressor.compress_documents(documents, "q"),
        "LangChain stuff format, 100 docs": lambda: "\n\n".join(
            format_document(document, prompt) for document in documents
        ),
        "aizk compressor, 100,000 docs": lambda: compressor.compress_documents(many_documents, "q"),
        "aizk floor: pack + to_markdown": lambda: RecallResult.from_candidates(
            pack(candidates, BUDGET), directory
        ).to_markdown(),
        "aizk postprocessor, 100 nodes": lambda: postprocessor.postprocess_nodes(
            nodes, query_str="q"
        ),
        "LlamaIndex get_content(LLM), 100 nodes": lambda: "\n\n".join(
            scored.node.get_content(metadata_mode=MetadataMode.LLM) for scored in nodes
        ),
        "LlamaIndex LongContextReorder, 100 nodes": lambda: reorder.postprocess_nodes(
            nodes, query_str="q"
        ),
        "LlamaIndex span alone (no-op postprocessor)": lambda: pass_through.postprocess_nodes(
            nodes, query_str="q"
        ),
        "aizk postprocessor, span bypassed": lambda: own_code(postprocessor, nodes, query),
    }
    pairs = [
        Pair(
            "1 compressor / LangChain stuff",
            "aizk compressor, 100 docs",
            "LangChain stuff format, 100 docs",
            goal=0.35,
        ),
        Pair(
            "2 postprocessor / LlamaIndex get_content",
            "aizk postprocessor, 100 nodes",
            "LlamaIndex get_content(LLM), 100 nodes",
            goal=0.35,
        ),
        Pair(
            "3 compressor 100,000 / 100 docs",
            "aizk compressor, 100,000 docs",
            "aizk compressor, 100 docs",
            goal=1.2,
        ),
        Pair(
            "4 compressor / floor",
            "aizk compressor, 100 docs",
            "aizk floor: pack + to_markdown",
            goal=2.0,
        ),
        Pair(
            "4 postprocessor / floor",
            "aizk postprocessor, 100 nodes",
            "aizk floor: pack + to_markdown",
            goal=2.0,
        ),
    ]

    kept = len(compressor.compress_documents(documents, "q")[0].metadata["aizk_recall"]["evidence"])
    print(f"python {platform.python_version()} on {platform.platform()}")
    print(f"cpu    {cpu_name()} ({_cores()} cores)")
    print(
        f"corpus {RETRIEVED} docs of 20-150 words (seed {SEED}), each in 2 of the reader's "
        f"scopes; budget {BUDGET} keeps {kept}; {samples} samples per call"
        + (" (quick mode)" if args.quick else "")
    )
    print()

    medians = measure(calls, samples, target)
    memory = peak_memory(lambda: compressor.compress_documents(many_documents, "q"))

    width = max(len(name) for name in calls)
    print(f"| {'call':<{width}} | median µs |")
    print(f"|{'-' * (width + 2)}|----------:|")
    for name, seconds in medians.items():
        print(f"| {name:<{width}} | {seconds * 1e6:9.1f} |")
    print()

    label_width = max(len(pair.label) for pair in pairs) + 4
    print(f"| {'ratio':<{label_width}} | value | goal    | met |")
    print(f"|{'-' * (label_width + 2)}|------:|---------|-----|")
    for pair in pairs:
        ratio = medians[pair.ours] / medians[pair.theirs]
        met = "yes" if ratio <= pair.goal else "NO"
        print(f"| {pair.label:<{label_width}} | {ratio:5.2f} | <= {pair.goal:<4} | {met:<3} |")
    mib = memory / 2**20
    met = "yes" if mib <= 1.0 else "NO"
    label = "5 peak memory, 100,000 docs (MiB)"
    print(f"| {label:<{label_width}} | {mib:5.2f} | <= 1    | {met:<3} |")
    own = medians["aizk postprocessor, span bypassed"]
    print()
    print(
        "For reference, not goals: with LlamaIndex's span bypassed, the postprocessor's own code "
        f"is {own / medians['LlamaIndex get_content(LLM), 100 nodes']:.2f} of get_content "
        f"(ratio 2) and {own / medians['aizk floor: pack + to_markdown']:.2f} of the floor "
        "(ratio 4)."
    )
    return 0


def _cores() -> int:
    import os

    return os.cpu_count() or 1


if __name__ == "__main__":
    sys.exit(main())
