"""The in-process stores' revision index is never stale: a change made through the store after
the server was built (an item added to a revision, replaced, deleted) is seen by the next read,
so a revision that became mixed answers as a URI of nothing at once. Also: the app's own
`revisions=` is looked at before any store, a store with no lookup says so when the server is
built, and `StoredText` is a frozen model whose scopes are required."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore
from llama_index.core import VectorStoreIndex
from llama_index.core.schema import TextNode
from pydantic import ValidationError

from aizk_integrations import scope_metadata
from aizk_integrations.langchain import AizkEvidenceCompressor
from aizk_integrations.langchain import AizkScopedRetriever as LangChainScopedRetriever
from aizk_integrations.mcp import StoredText, recall_server
from tests.mcp.corpus import (
    NOWHERE,
    SAM_PLAN,
    SAM_REVISION,
    langchain_store,
    reader,
    uri,
)
from tests.mcp.sdk import McpError, connected, wire
from tests.mcp.stores import Built, built

IN_PROCESS = ("langchain-in-memory", "langchain-faiss", "llama-index-simple", "llama-index-faiss")
NEW_ID = "00000000-0000-4000-8000-0000000fffff"


def read(server: Any, *uris: str) -> list[str | tuple[int, str]]:
    """Each URI's text, or the error answered, its URI written as the URI of nothing's."""

    async def scenario() -> list[str | tuple[int, str]]:
        answers: list[str | tuple[int, str]] = []
        async with connected(server) as session:
            for each in uris:
                try:
                    [content] = wire(await session.read_resource(each))["contents"]
                except McpError as error:
                    answers.append((error.error.code, error.error.message.replace(each, "URI")))
                else:
                    answers.append(content["text"])
        return answers

    return asyncio.run(scenario())


def add(store: Built, text: str, metadata: dict[str, Any], item_id: str = NEW_ID) -> None:
    """One item added through the store's own API, as an app adds it."""
    if isinstance(store.retriever, VectorStoreIndex):
        store.retriever.insert_nodes([TextNode(id_=item_id, text=text, metadata=metadata)])
        return
    assert isinstance(store.retriever, LangChainScopedRetriever)
    store.retriever.vectorstore.add_documents(
        [Document(text, id=item_id, metadata=metadata)], ids=[item_id]
    )


def of(revision: tuple[str, str], scopes: object) -> dict[str, Any]:
    return {
        **scope_metadata(scopes),
        "artifact_id": revision[0],
        "artifact_content_id": revision[1],
    }


@pytest.mark.parametrize("kind", IN_PROCESS)
def test_an_item_added_after_the_server_was_built_is_read_at_once(kind: str) -> None:
    store = built(kind)
    server = store.server(reader=reader("sam"))
    assert read(server, uri(SAM_REVISION)) == ["\n".join(SAM_PLAN)]
    add(store, "Part three: the write-up.", of(SAM_REVISION, "sam"))
    assert read(server, uri(SAM_REVISION)) == ["\n".join([*SAM_PLAN, "Part three: the write-up."])]


@pytest.mark.parametrize("kind", IN_PROCESS)
def test_a_revision_made_mixed_after_the_server_was_built_answers_as_a_uri_of_nothing(
    kind: str,
) -> None:
    store = built(kind)
    server = store.server(reader=reader("sam"))
    assert read(server, uri(SAM_REVISION)) == ["\n".join(SAM_PLAN)]
    add(store, "Ana's aside.", of(SAM_REVISION, "ana"))
    assert read(server, uri(SAM_REVISION), uri(NOWHERE)) == [(read(server, uri(NOWHERE))[0])] * 2


def test_an_item_replaced_or_deleted_through_the_store_is_seen_at_once() -> None:
    store = built("langchain-in-memory")
    server = store.server(reader=reader("sam"))
    add(store, "Ana's aside.", of(SAM_REVISION, "ana"))
    [refused] = read(server, uri(SAM_REVISION))
    add(store, "Sam's aside.", of(SAM_REVISION, "sam"))  # the same id, now Sam's
    assert read(server, uri(SAM_REVISION)) == ["\n".join([*SAM_PLAN, "Sam's aside."])]
    assert isinstance(store.retriever, LangChainScopedRetriever)
    store.retriever.vectorstore.delete([NEW_ID])
    assert read(server, uri(SAM_REVISION)) == ["\n".join(SAM_PLAN)]
    assert isinstance(refused, tuple)


@pytest.mark.parametrize("kind", ["langchain-in-memory", "langchain-faiss"])
def test_ids_stored_as_uuid_objects_are_found(kind: str) -> None:
    store = built(kind)
    revision = ("019820a1-0000-7000-8000-0000000000aa", "019820a4-0000-7000-8000-0000000000cc")
    metadata = {
        **scope_metadata("sam"),
        "artifact_id": uuid.UUID(revision[0]),
        "artifact_content_id": uuid.UUID(revision[1]),
    }
    add(store, "Held as UUIDs.", metadata)
    assert read(store.server(reader=reader("sam")), uri(revision)) == ["Held as UUIDs."]


class Elsewhere(VectorStore):
    """A store this library has no revision lookup for: an app's own, over LangChain's
    in-memory store."""

    def __init__(self) -> None:
        self._inner = langchain_store()

    @property
    def embeddings(self) -> Embeddings:
        return self._inner.embeddings

    def add_texts(self, texts: Any, metadatas: Any = None, **kwargs: Any) -> list[str]:
        return self._inner.add_texts(texts, metadatas, **kwargs)

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        return self._inner.similarity_search(query, k, **kwargs)

    @classmethod
    def from_texts(cls, texts: Any, embedding: Any, metadatas: Any = None, **kwargs: Any) -> Any:
        raise NotImplementedError


def test_a_store_without_a_lookup_is_refused_when_the_server_is_built_naming_revisions() -> None:
    retriever = LangChainScopedRetriever(vectorstore=Elsewhere())
    with pytest.raises(
        TypeError, match=r"cannot read a revision exactly in a Elsewhere.*revisions="
    ):
        recall_server(retriever, AizkEvidenceCompressor(), reader=reader("sam"))


def test_revisions_are_looked_at_before_the_store_and_serve_a_store_without_a_lookup() -> None:
    elsewhere = {SAM_REVISION: [StoredText(text="The whole plan.", scopes=["sam"])]}

    def revisions(artifact_id: str, artifact_content_id: str) -> Sequence[StoredText]:
        return elsewhere.get((artifact_id, artifact_content_id), [])

    retriever = LangChainScopedRetriever(vectorstore=Elsewhere())
    compressor = AizkEvidenceCompressor()
    sam = recall_server(retriever, compressor, reader=reader("sam"), revisions=revisions)
    ana = recall_server(retriever, compressor, reader=reader("ana"), revisions=revisions)
    assert read(sam, uri(SAM_REVISION)) == ["The whole plan."]
    assert read(ana, uri(SAM_REVISION)) == read(ana, uri(NOWHERE))


def test_stored_text_needs_its_scopes_and_is_frozen() -> None:
    with pytest.raises(ValidationError, match="scopes"):
        StoredText(text="no scopes")  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="extra"):
        StoredText(text="t", scopes=["sam"], owner="sam")  # type: ignore[call-arg]
    stored = StoredText(text="t", scopes=["sam"])
    with pytest.raises(ValidationError, match="frozen"):
        stored.text = "changed"
