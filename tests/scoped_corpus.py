"""A shared store of many readers' notes, and an offline embedding that ranks them by meaning.

Scoped retrieval is tested where it matters: one store holding 20 readers' notes, queried top-k.
The frameworks' own offline embeddings cannot show starvation: LlamaIndex's `MockEmbedding`
gives every text the same vector (every score ties, so the ranking is insertion order), and
LangChain's `DeterministicFakeEmbedding` gives a query a vector unrelated to the texts sharing
its words. `hash_vector` is the smallest embedding that ranks like a real one: one seeded
Gaussian vector per word, summed, so texts sharing words are close, no two notes tie, and every
process computes the same vectors.
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass
from functools import cache

from aizk_integrations import Scope, ScopeDirectory, scope_metadata

DIMENSIONS = 32
READERS = [f"user-{index:02d}" for index in range(20)]
ORGANIZATIONS = [f"org-{index}" for index in range(4)]
TOPICS = [
    *("garden", "budget", "reranker", "meeting", "recipe", "travel", "invoice", "roadmap"),
    *("novel", "piano", "chess", "tomato", "lecture", "sprint", "backlog", "vacation"),
    *("dentist", "insurance", "kettle", "bicycle", "harbor"),
]


@cache
def _word(word: str) -> tuple[float, ...]:
    seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "big")
    rng = random.Random(seed)
    return tuple(rng.gauss(0.0, 1.0) for _ in range(DIMENSIONS))


def hash_vector(text: str) -> list[float]:
    """Unit-length sum of one seeded Gaussian vector per word of `text`."""
    total = [0.0] * DIMENSIONS
    for word in text.lower().split():
        for index, value in enumerate(_word(word)):
            total[index] += value
    norm = math.sqrt(sum(value * value for value in total)) or 1.0
    return [value / norm for value in total]


def organizations_of(reader: str) -> list[str]:
    """Each reader is in two of the four organizations."""
    index = READERS.index(reader)
    return [ORGANIZATIONS[index % 4], ORGANIZATIONS[(index + 1) % 4]]


def directory_of(reader: str) -> ScopeDirectory:
    return ScopeDirectory.for_caller(
        reader, {org: Scope(name=org.replace("org-", "team-")) for org in organizations_of(reader)}
    )


@dataclass(frozen=True)
class Note:
    """One stored note: its id, text and the metadata scoped retrieval writes for it."""

    id: str
    text: str
    scopes: tuple[str, ...]

    @property
    def metadata(self) -> dict[str, list[str]]:
        return scope_metadata(list(self.scopes))


def notes(count: int = 1000, seed: int = 7) -> list[Note]:
    """`count` notes spread over the readers: most in their owner's private scope, some shared
    with one of the owner's organizations, some in an organization alone, a few in two."""
    rng = random.Random(seed)
    made = []
    for number in range(count):
        owner = READERS[number % len(READERS)]
        orgs = organizations_of(owner)
        roll = rng.random()
        if roll < 0.6:
            scopes: tuple[str, ...] = (owner,)
        elif roll < 0.8:
            scopes = (owner, rng.choice(orgs))
        elif roll < 0.95:
            scopes = (rng.choice(orgs),)
        else:
            scopes = tuple(orgs)
        text = " ".join(rng.sample(TOPICS, 3)) + f" note{number:04d}"
        made.append(Note(id=f"note-{number:04d}", text=text, scopes=scopes))
    return made


def readable_by(reader: str, stored: list[Note]) -> list[Note]:
    """The notes `reader` may read: every scope of the note is one of theirs."""
    theirs = {reader, *organizations_of(reader)}
    return [note for note in stored if set(note.scopes) <= theirs]


def questions(count: int = 10, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.sample(TOPICS, 2)) for _ in range(count)]
