"""Two readers' notes in one shared store, each private note carrying a marker string of its
reader's, so any answer, error, notification or log line can be searched for the other's."""

from __future__ import annotations

from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore

from aizk_integrations import Scope, ScopeDirectory, scope_metadata

SAM_MARKER = "SAMSECRET-4d1e"
ANA_MARKER = "ANASECRET-9b2c"
ORGANIZATIONS = {"org-club": Scope(name="book-club", description="Neighborhood book club")}

SAM_REVISION = ("019820a1-0000-7000-8000-00000000a001", "019820a4-0000-7000-8000-00000000c001")
ANA_REVISION = ("019820a1-0000-7000-8000-00000000a002", "019820a4-0000-7000-8000-00000000c002")
CLUB_REVISION = ("019820a1-0000-7000-8000-00000000a003", "019820a4-0000-7000-8000-00000000c003")
MIXED_REVISION = ("019820a1-0000-7000-8000-00000000a004", "019820a4-0000-7000-8000-00000000c004")
SPELLED_REVISION = ("019820a1-0000-7000-8000-00000000a005", "019820a4-0000-7000-8000-00000000c005")
"""A revision whose two items write its ids in other spellings the packer reads: capitals,
braces, a URN and bare hex."""
NOWHERE = ("019820a1-0000-7000-8000-00000000a0ff", "019820a4-0000-7000-8000-00000000c0ff")

SAM_PLAN = (
    f"Q3 plan by Sam {SAM_MARKER}, part one:\n  the reranker ablation.",
    "Part two: the sweep.",
)


def uri(revision: tuple[str, str]) -> str:
    return f"aizk://artifacts/{revision[0]}/contents/{revision[1]}"


def reader(user: str) -> ScopeDirectory:
    return ScopeDirectory.for_caller(user, ORGANIZATIONS)


def _in(revision: tuple[str, str]) -> dict[str, str]:
    return {"artifact_id": revision[0], "artifact_content_id": revision[1]}


def _spelled(revision: tuple[str, str], way: int) -> dict[str, str]:
    artifact, content = revision
    if way == 0:
        return {"artifact_id": artifact.upper(), "artifact_content_id": f"{{{content}}}"}
    return {"artifact_id": f"urn:uuid:{artifact}", "artifact_content_id": content.replace("-", "")}


def item_id(position: int) -> str:
    """The id the stores keep the note at `position` under: ids that sort as the notes are
    stored, since Qdrant lists points in the order of their ids."""
    return f"00000000-0000-4000-8000-{position:012x}"


def notes() -> list[tuple[str, dict[str, Any]]]:
    """(text, metadata) of every note, in the order they are stored."""
    stored: list[tuple[str, dict[str, Any]]] = [
        (SAM_PLAN[0], {**scope_metadata("sam"), **_in(SAM_REVISION)}),
        (f"Ana's gate code {ANA_MARKER} is 4417.", {**scope_metadata("ana"), **_in(ANA_REVISION)}),
        (SAM_PLAN[1], {**scope_metadata("sam"), **_in(SAM_REVISION)}),
        ("The club meets on Thursdays.", {**scope_metadata("org-club"), **_in(CLUB_REVISION)}),
        (
            "Shared with Sam and the club.",
            {**scope_metadata(["sam", "org-club"]), **_in(MIXED_REVISION)},
        ),
        (f"Sam alone {SAM_MARKER}.", {**scope_metadata("sam"), **_in(MIXED_REVISION)}),
        ("Spelled one.", {**scope_metadata("sam"), **_spelled(SPELLED_REVISION, 0)}),
        ("Spelled two.", {**scope_metadata("sam"), **_spelled(SPELLED_REVISION, 1)}),
    ]
    for n in range(12):
        stored.append((f"Sam's note {n} {SAM_MARKER} on the reranker.", scope_metadata("sam")))
        stored.append((f"Ana's note {n} {ANA_MARKER} on the garden.", scope_metadata("ana")))
    return stored


class CountingStore(InMemoryVectorStore):
    """LangChain's in-memory store, counting the searches it is asked."""

    searches = 0

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        type(self).searches += 1
        return super().similarity_search(query, k, **kwargs)

    async def asimilarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        type(self).searches += 1
        return await super().asimilarity_search(query, k, **kwargs)


def langchain_store() -> CountingStore:
    store = CountingStore(embedding=DeterministicFakeEmbedding(size=32))
    store.add_documents([Document(text, metadata=metadata) for text, metadata in notes()])
    return store
