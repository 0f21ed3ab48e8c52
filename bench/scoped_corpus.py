"""The scoped-retrieval benchmarks' data: one corpus, one embedding and readers of any size,
shared by bench/scoped.py (every store) and bench/scoped_postgres.py (Postgres + pgvector), so
their rows are measured on the same excerpts and questions."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from functools import cache

from langchain_core.embeddings import Embeddings
from llama_index.core.base.embeddings.base import BaseEmbedding

from aizk_integrations import Scope, ScopeDirectory

SEED = 5
STORED = 2000
BUDGET = 2048
DIMENSIONS = 32
SIZES = (0, 1, 100, 1000, 10_000)
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


def _word(word: str) -> list[float]:
    rng = random.Random(word)
    return [rng.gauss(0.0, 1.0) for _ in range(DIMENSIONS)]


_WORDS: dict[str, list[float]] = {}


def vector(text: str) -> list[float]:
    """Texts sharing words are close: a seeded Gaussian vector per word, summed (no network)."""
    return list(_vector(text))


@cache
def _vector(text: str) -> tuple[float, ...]:
    """Worked out once per text: every store of the run embeds the same excerpts."""
    total = [0.0] * DIMENSIONS
    for word in text.split():
        if word not in _WORDS:
            _WORDS[word] = _word(word)
        for index, value in enumerate(_WORDS[word]):
            total[index] += value
    norm = sum(value * value for value in total) ** 0.5 or 1.0
    return tuple(value / norm for value in total)


class WordEmbeddings(Embeddings):
    def embed_query(self, text: str) -> list[float]:
        return vector(text)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [vector(text) for text in texts]


class WordEmbedding(BaseEmbedding):
    def _get_query_embedding(self, query: str) -> list[float]:
        return vector(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return vector(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return vector(text)


@dataclass(frozen=True)
class Excerpt:
    id: str
    text: str
    owner: str


def corpus(owned: float) -> list[Excerpt]:
    """`STORED` excerpts, the share `owned` of them the reader's, the rest 19 others'."""
    rng = random.Random(SEED)
    made = []
    for number in range(STORED):
        owner = "reader" if number < owned * STORED else f"other-{number % 19}"
        words = " ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(20, 150)))
        made.append(Excerpt(str(uuid.UUID(int=number + 1)), words, owner))
    rng.shuffle(made)
    return made


@cache  # a directory is immutable, and each size is asked for on every store
def sized(size: int) -> ScopeDirectory:
    """The reader padded with groups that hold nothing, half of them named by UUIDs."""
    if size == 0:
        return ScopeDirectory(scopes={})
    scopes = {"reader": Scope(name="private")}
    for number in range(size - 1):
        key = str(uuid.UUID(int=10**6 + number)) if number % 2 else f"group-{number:05d}"
        scopes[key] = Scope(name=f"group {number}")
    return ScopeDirectory(scopes=scopes)


def asked_questions(count: int) -> list[str]:
    """`count` questions of three of the corpus's words, the same in every run."""
    rng = random.Random(SEED + 1)
    return [" ".join(rng.sample(VOCABULARY, 3)) for _ in range(count)]
