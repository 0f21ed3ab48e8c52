"""Every store scoped retrieval supports, in both frameworks, behind the SDK's own client: the
recall tool answers each reader with their own evidence only, and the resources read a revision
exactly, in stored order and whatever spelling its ids were stored in, while another reader's
revision and a mixed one answer byte for byte as a URI of nothing."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from aizk_integrations import RecallResult
from aizk_integrations.mcp import JWTReaderVerifier
from tests.mcp.corpus import (
    ANA_MARKER,
    ANA_REVISION,
    CLUB_REVISION,
    MIXED_REVISION,
    NOWHERE,
    ORGANIZATIONS,
    SAM_MARKER,
    SAM_PLAN,
    SAM_REVISION,
    SPELLED_REVISION,
    reader,
    uri,
)
from tests.mcp.postgres_stores import POSTGRES, postgres_built
from tests.mcp.sdk import McpError, connected, session_at, wire
from tests.mcp.stores import KINDS, Built, built
from tests.mcp.tokens import ISSUER, KEY, claims, jwks_served, signed
from tests.serving import listening, port_of, serving

QUERIES = [{"query": "the reranker", "budget": 4096}, {"query": "Ana's gate code"}]


@pytest.fixture(scope="module", params=[*KINDS, *POSTGRES])
def store(request: pytest.FixtureRequest) -> Iterator[Built]:
    """The corpus in one store, built once for the module; Postgres on the session's server."""
    if request.param not in POSTGRES:
        yield built(request.param)
        return
    with postgres_built(request.param, request.getfixturevalue("postgres_server")) as made:
        yield made


def answers(store: Built, user: str, *uris: str, notes: list[str] | None = None) -> list[Any]:
    """`user`'s recall of each query, then each URI's text or the error answered, every
    notification the client got noted in `notes`."""

    async def noted(message: Any) -> None:
        if notes is not None:
            notes.append(repr(message))

    async def scenario() -> list[Any]:
        said: list[Any] = []
        server = store.server(reader=reader(user))
        async with connected(server, logging_callback=noted, message_handler=noted) as session:
            for call in QUERIES:
                said.append(wire(await session.call_tool("recall", call)))
            for each in uris:
                try:
                    [content] = wire(await session.read_resource(each))["contents"]
                except McpError as error:
                    said.append(error)
                else:
                    said.append(content["text"])
        return said

    return asyncio.run(scenario())


def error_of(answer: object, revision: tuple[str, str]) -> tuple[int, str, object]:
    """The error, its URI written as the URI of nothing's, to compare the two byte for byte."""
    assert isinstance(answer, McpError), answer
    return (
        answer.error.code,
        answer.error.message.replace(uri(revision), uri(NOWHERE)),
        answer.error.data,
    )


def test_each_reader_recalls_their_own_evidence_and_nothing_of_the_others(store: Built) -> None:
    for user, own, other in (("sam", SAM_MARKER, ANA_MARKER), ("ana", ANA_MARKER, SAM_MARKER)):
        notes: list[str] = []
        found = answers(store, user, notes=notes)
        first = found[0]
        assert not first.get("isError")
        recall = RecallResult.model_validate(first["structuredContent"]["recall"])
        assert first["content"][0]["text"] == recall.to_markdown()
        assert own in first["content"][0]["text"]
        assert first["structuredContent"]["counts"]["kept"] == len(recall.evidence)
        assert other not in repr(found) + repr(notes)


def test_a_revision_reads_back_exactly_its_items_in_stored_order(store: Built) -> None:
    sam = answers(store, "sam", uri(SAM_REVISION), uri(CLUB_REVISION))
    assert sam[2:] == ["\n".join(SAM_PLAN), "The club meets on Thursdays."]
    assert answers(store, "ana", uri(CLUB_REVISION))[2:] == ["The club meets on Thursdays."]


def test_a_revision_stored_under_other_spellings_of_its_ids_is_found(store: Built) -> None:
    assert answers(store, "sam", uri(SPELLED_REVISION))[2:] == ["Spelled one.\nSpelled two."]


@pytest.mark.parametrize(("user", "revision"), [("sam", ANA_REVISION), ("ana", MIXED_REVISION)])
def test_a_foreign_or_mixed_revision_answers_as_a_uri_of_nothing(
    store: Built, user: str, revision: tuple[str, str]
) -> None:
    foreign, nowhere = answers(store, user, uri(revision), uri(NOWHERE))[2:]
    assert error_of(foreign, revision) == error_of(nowhere, NOWHERE)
    assert ANA_MARKER not in repr(foreign)
    assert SAM_MARKER not in repr(foreign)


def test_the_server_logs_nothing_of_another_readers_at_debug(
    store: Built, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG):
        answers(store, "sam", uri(ANA_REVISION), uri(MIXED_REVISION), uri(SAM_REVISION))
    logged = [record.getMessage() for record in caplog.records]
    assert logged
    assert not [line for line in logged if ANA_MARKER in line]


def test_over_http_each_readers_token_gets_their_own_evidence_and_revisions_only(
    store: Built, caplog: pytest.LogCaptureFixture
) -> None:
    """Two readers' bearer tokens, one server over streamable HTTP: each recalls and reads their
    own, and the other's revision answers as a URI of nothing; the server's log, at DEBUG,
    names neither reader's text."""
    own = {"sam": (SAM_MARKER, SAM_REVISION), "ana": (ANA_MARKER, ANA_REVISION)}

    async def as_reader(url: str, token: str, other: tuple[str, str]) -> list[Any]:
        said: list[Any] = []
        async with session_at(url, token) as session:
            said.append(wire(await session.call_tool("recall", QUERIES[0])))
            for revision in (other, NOWHERE):
                try:
                    said.append(wire(await session.read_resource(uri(revision))))
                except McpError as error:
                    said.append(error_of(error, revision))
        return said

    with caplog.at_level(logging.DEBUG), jwks_served(KEY) as jwks_url, listening() as sock:
        audience = f"http://127.0.0.1:{port_of(sock)}/mcp"
        verifier = JWTReaderVerifier(
            issuer=ISSUER, audience=audience, jwks_url=jwks_url, organizations=ORGANIZATIONS
        )
        with serving(store.server(auth=verifier).streamable_http_app(), sock):
            for user, other in (("sam", "ana"), ("ana", "sam")):
                token = signed(KEY, claims(audience, user))
                recall, foreign, nowhere = asyncio.run(as_reader(audience, token, own[other][1]))
                assert own[user][0] in recall["content"][0]["text"]
                assert own[other][0] not in repr(recall)
                assert foreign == nowhere
    logged = [record.getMessage() for record in caplog.records]
    assert not [line for line in logged if SAM_MARKER in line or ANA_MARKER in line]
