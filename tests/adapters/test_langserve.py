"""A LangServe app on 127.0.0.1, as teams deploy a chain: every route answers a reader with only
that reader's evidence, whatever another reader asked before and whatever a client sends.

The server is real (FastAPI, LangServe's `add_routes`, uvicorn in a thread) and so is the client
(httpx over the loopback); the reader comes from the request's own identity, a header standing
in for the app's authentication, through LangServe's `per_req_config_modifier`.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore
from langserve import add_routes

from aizk_integrations.langchain import (
    AizkEvidenceCompressor,
    AizkEvidenceRetriever,
    AizkScopedRetriever,
)
from tests.scoped_corpus import READERS, directory_of, hash_vector, notes, questions
from tests.serving import serving

NOTES = notes(400)
pytestmark = pytest.mark.filterwarnings("ignore:astream_log is deprecated")  # LangServe serves it


class WordEmbeddings(Embeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [hash_vector(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return hash_vector(text)


def reader_from_identity(config: dict[str, Any], request: Any) -> dict[str, Any]:
    """The app's auth, in miniature: the reader is the request's user, never what it sent."""
    configurable = dict(config.get("configurable") or {})
    configurable["aizk_reader"] = directory_of(request.headers["x-user"])
    return {**config, "configurable": configurable}


def app() -> FastAPI:
    store = InMemoryVectorStore(WordEmbeddings())
    store.add_documents(
        [
            Document(
                note.text, id=str(uuid.uuid5(uuid.NAMESPACE_URL, note.id)), metadata=note.metadata
            )
            for note in NOTES
        ]
    )
    packer = AizkEvidenceCompressor(budget=120)
    chain = AizkEvidenceRetriever(
        base_retriever=AizkScopedRetriever(vectorstore=store, search_kwargs={"k": 4}),
        compressor=packer,
    )
    served = FastAPI()
    add_routes(served, chain, path="/evidence", per_req_config_modifier=reader_from_identity)
    # Authorized at the packer only: the prompt is clean, the routes are not.
    unscoped = AizkEvidenceRetriever(base_retriever=store.as_retriever(), compressor=packer)
    add_routes(served, unscoped, path="/unscoped", per_req_config_modifier=reader_from_identity)
    return served


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with serving(app()) as url:
        yield url


def foreign(reader: str) -> set[str]:
    theirs = {note.id for note in NOTES if directory_of(reader).may_read(list(note.scopes))}
    return {note.text.split()[-1] for note in NOTES if note.id not in theirs}


def leaked(body: str, reader: str) -> set[str]:
    return set(re.findall(r"note\d{4}", body)) & foreign(reader)


ROUTES: dict[str, Callable[[str], dict[str, object]]] = {
    "invoke": lambda question: {"input": question},
    "batch": lambda question: {"inputs": [question, question]},
    "stream": lambda question: {"input": question},
    "stream_log": lambda question: {"input": question},
    "stream_events": lambda question: {"input": question},
}


@pytest.mark.parametrize("route", list(ROUTES))
def test_every_route_answers_each_reader_with_only_that_readers_notes(
    server: str, route: str
) -> None:
    with httpx.Client(timeout=30) as client:
        for reader, question in zip(READERS[:10], questions(10), strict=True):
            response = client.post(
                f"{server}/evidence/{route}",
                json=ROUTES[route](question),
                headers={"x-user": reader},
            )
            assert response.status_code == 200, response.text
            assert "note" in response.text  # the reader's own notes are there
            assert leaked(response.text, reader) == set()


def test_a_reader_a_client_sends_cannot_choose_the_reader(server: str) -> None:
    sneaky = {
        "input": "garden budget",
        "config": {
            "configurable": {"aizk_reader": json.loads(directory_of("user-01").model_dump_json())}
        },
    }
    with httpx.Client(timeout=30) as client:
        response = client.post(
            f"{server}/evidence/invoke", json=sneaky, headers={"x-user": "user-02"}
        )
    assert response.status_code == 200, response.text
    assert leaked(response.text, "user-02") == set()


def test_authorizing_at_the_packer_alone_leaks_through_the_event_routes(server: str) -> None:
    # What scoped retrieval is for: the same check finds other readers' notes in the events of
    # a chain whose retriever is not scoped, though its block (the prompt) holds none.
    with httpx.Client(timeout=30) as client:
        leaking = 0
        for reader, question in zip(READERS[:10], questions(10), strict=True):
            body = {"input": question}
            events = client.post(
                f"{server}/unscoped/stream_events", json=body, headers={"x-user": reader}
            )
            answer = client.post(f"{server}/unscoped/invoke", json=body, headers={"x-user": reader})
            assert leaked(answer.text, reader) == set()
            leaking += bool(leaked(events.text, reader))
    assert leaking >= 8
