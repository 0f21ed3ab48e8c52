"""What scoped retrieval costs and saves, per request, next to filtering after the store's top k.

One shared LangChain store per supported kind holds 2,000 excerpts of 20-150 words: a reader
owns 5% of them (100) or 50% (1,000), the rest are other readers'. Each request packs to a
budget of 2,048 tokens, as the main benchmark does. For each store and reader it reports the
store calls per request, the items the store returned in all and how many distinct ones, the
items kept, and the median time per request, for:

* scoped: `AizkEvidenceRetriever(base_retriever=AizkScopedRetriever(vectorstore=store))`, the
  store asked for the reader's items only, page by page while the budget has room;
* unscoped: `AizkEvidenceRetriever(base_retriever=store.as_retriever(search_kwargs={"k": 10}))`,
  the store's top 10 for everyone, authorized at the packer alone.

The goal: scoped paging keeps the distinct items fetched within 2x of what the reader's kept
prefix needs (the kept items and the one that ended the walk).

    python bench/scoped.py            # full run
    python bench/scoped.py --quick    # a few requests, to keep the script from rotting (CI)
"""

from __future__ import annotations

import argparse
import logging
import random
import statistics
import time
import uuid
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import chromadb
from chromadb.config import Settings
from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from langchain_qdrant import QdrantVectorStore

from aizk_integrations import ScopeDirectory, scope_metadata
from aizk_integrations.langchain import (
    AizkEvidenceCompressor,
    AizkEvidenceRetriever,
    AizkScopedRetriever,
)

warnings.filterwarnings("ignore", message="`langchain-community` is being sunset")
from langchain_community.vectorstores import FAISS  # noqa: E402

SEED = 5
STORED = 2000
BUDGET = 2048
DIMENSIONS = 32
VOCABULARY = [
    "reranker",
    "ablation",
    "sweep",
    "fused",
    "lane",
    "retrieval",
    "plan",
    "budget",
    "token",
    "evidence",
    "scope",
    "session",
    "memory",
    "profile",
    "community",
    "overview",
    "artifact",
    "revision",
    "quarter",
    "target",
    "study",
    "block",
    "morning",
    "review",
    "notes",
    "draft",
    "chapter",
    "summary",
    "meeting",
    "agenda",
    "owner",
    "deadline",
    "metric",
    "baseline",
    "recall",
    "precision",
    "latency",
    "index",
    "shard",
    "replica",
    "embedding",
    "cosine",
    "score",
    "rank",
    "window",
    "prompt",
    "context",
]


class WordEmbeddings(Embeddings):
    """Texts sharing words are close: a seeded Gaussian vector per word, summed (no network)."""

    def __init__(self) -> None:
        self._words: dict[str, list[float]] = {}

    def _word(self, word: str) -> list[float]:
        if word not in self._words:
            rng = random.Random(word)
            self._words[word] = [rng.gauss(0.0, 1.0) for _ in range(DIMENSIONS)]
        return self._words[word]

    def embed_query(self, text: str) -> list[float]:
        total = [0.0] * DIMENSIONS
        for word in text.split():
            for index, value in enumerate(self._word(word)):
                total[index] += value
        norm = sum(value * value for value in total) ** 0.5 or 1.0
        return [value / norm for value in total]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(text) for text in texts]


def corpus(owned: float) -> list[Document]:
    """`STORED` excerpts, the share `owned` of them the reader's, the rest 19 others'."""
    rng = random.Random(SEED)
    documents = []
    for number in range(STORED):
        owner = "reader" if number < owned * STORED else f"other-{number % 19}"
        words = " ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(20, 150)))
        documents.append(
            Document(words, id=str(uuid.UUID(int=number + 1)), metadata=scope_metadata(owner))
        )
    rng.shuffle(documents)
    return documents


_chroma = chromadb.EphemeralClient(Settings(anonymized_telemetry=False))


def stores(documents: list[Document], name: str) -> dict[str, VectorStore]:
    ids = [document.id or "" for document in documents]
    embedding = WordEmbeddings()
    in_memory = InMemoryVectorStore(embedding)
    in_memory.add_documents(documents)
    chroma = Chroma(collection_name=name, embedding_function=embedding, client=_chroma)
    chroma.add_documents(documents, ids=ids)
    return {
        "in-memory (exact)": in_memory,
        "qdrant (exact)": QdrantVectorStore.from_documents(
            documents, embedding, location=":memory:", collection_name=name, ids=ids
        ),
        "chroma (necessary)": chroma,
        "faiss (paged)": FAISS.from_documents(documents, embedding, ids=ids),
    }


@dataclass
class Counts:
    calls: int = 0
    returned: int = 0
    distinct: set[str] | None = None


def counted(store: VectorStore, counts: Counts) -> None:
    """Count every search the store answers, and what it returns."""
    search = store.similarity_search

    def counting(query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        found = search(query, k=k, **kwargs)
        counts.calls += 1
        counts.returned += len(found)
        assert counts.distinct is not None
        counts.distinct.update(document.page_content for document in found)
        return found

    store.similarity_search = counting  # type: ignore[method-assign]  # counting, for the bench


@dataclass(frozen=True)
class Row:
    store: str
    owned: str
    retrieval: str
    calls: float
    returned: float
    distinct: float
    needed: float
    kept: float
    median_ms: float


def run(
    retriever: BaseRetriever, counts: Counts, questions: Sequence[str], config: RunnableConfig
) -> tuple[list[tuple[int, int, int, int]], float]:
    per_request = []
    times = []
    for question in questions:
        counts.calls = counts.returned = 0
        counts.distinct = set()
        start = time.perf_counter()
        blocks = retriever.invoke(question, config=config)
        times.append(time.perf_counter() - start)
        block_counts = blocks[0].metadata["aizk_counts"] if blocks else {"kept": 0}
        kept = block_counts["kept"]
        per_request.append((counts.calls, counts.returned, len(counts.distinct), kept))
    return per_request, statistics.median(times)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few requests; for CI")
    args = parser.parse_args(argv)
    # The unscoped rows withhold other readers' notes by design: their warnings would bury it.
    logging.getLogger("aizk_integrations").setLevel(logging.ERROR)
    rng = random.Random(SEED + 1)
    questions = [" ".join(rng.sample(VOCABULARY, 3)) for _ in range(3 if args.quick else 20)]
    reader: RunnableConfig = {
        "configurable": {"aizk_directory": ScopeDirectory.for_caller("reader", {})}
    }
    packer = AizkEvidenceCompressor(budget=BUDGET)
    rows = []
    for owned in (0.05, 0.5):
        built = stores(corpus(owned), f"bench-{int(owned * 100)}")
        for name, store in built.items():
            counts = Counts()
            counted(store, counts)
            retrievers: dict[str, BaseRetriever] = {
                "scoped": AizkEvidenceRetriever(
                    base_retriever=AizkScopedRetriever(vectorstore=store), compressor=packer
                ),
                "unscoped (k=10)": AizkEvidenceRetriever(
                    base_retriever=store.as_retriever(search_kwargs={"k": 10}),
                    compressor=packer,
                ),
            }
            for retrieval, retriever in retrievers.items():
                per_request, median = run(retriever, counts, questions, reader)
                calls, returned, distinct, kept = (
                    statistics.mean(values) for values in zip(*per_request, strict=True)
                )
                needed = kept + 1
                rows.append(
                    Row(
                        name,
                        f"{owned:.0%}",
                        retrieval,
                        calls,
                        returned,
                        distinct,
                        needed,
                        kept,
                        median * 1000,
                    )
                )
    print(
        f"{STORED} stored excerpts of 20-150 words, budget {BUDGET}, "
        f"{len(questions)} questions per row (means per request)\n"
    )
    print(
        "| store | reader owns | retrieval | store calls | returned | distinct | kept "
        "| distinct / needed | median ms |"
    )
    print("|---|---|---|--:|--:|--:|--:|--:|--:|")
    for row in rows:
        ratio = row.distinct / row.needed
        print(
            f"| {row.store} | {row.owned} | {row.retrieval} | {row.calls:.1f} | "
            f"{row.returned:.0f} | {row.distinct:.0f} | {row.kept:.1f} | {ratio:.2f} | "
            f"{row.median_ms:.1f} |"
        )
    scoped = [row for row in rows if row.retrieval == "scoped" and "exact" in row.store]
    worst = max(row.distinct / row.needed for row in scoped)
    print(
        f"\ngoal: exact stores fetch distinct items within 2x of the kept prefix's need: "
        f"worst {worst:.2f} -> {'yes' if worst <= 2 else 'NO'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
