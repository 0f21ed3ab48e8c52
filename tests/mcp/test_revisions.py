"""The revision resources: the exact stored text an evidence item's URI points at, for a reader
who may read every item of it, and for anyone else exactly the answer of a URI of nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from aizk_integrations.langchain import AizkEvidenceCompressor
from aizk_integrations.langchain import AizkScopedRetriever as LangChainScopedRetriever
from aizk_integrations.mcp import StoredText, recall_server
from tests.mcp.corpus import (
    ANA_MARKER,
    ANA_REVISION,
    CLUB_REVISION,
    MIXED_REVISION,
    NOWHERE,
    SAM_PLAN,
    SAM_REVISION,
    langchain_store,
    reader,
    uri,
)
from tests.mcp.sdk import McpError, connected, wire
from tests.mcp.servers import FRAMEWORKS, made_with


def read(framework: str, user: str, *uris: str) -> list[str | McpError]:
    """Each URI's text as `user` reads it, or the error the server answered."""

    async def scenario() -> list[str | McpError]:
        answers: list[str | McpError] = []
        async with connected(made_with(framework, reader=reader(user))) as session:
            for each in uris:
                try:
                    [content] = wire(await session.read_resource(each))["contents"]
                except McpError as error:
                    answers.append(error)
                    continue
                answers.append(content["text"])
        return answers

    return asyncio.run(scenario())


def error_of(answer: str | McpError) -> tuple[int, str, object]:
    assert isinstance(answer, McpError), answer
    return answer.error.code, answer.error.message, answer.error.data


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_revision_stored_as_several_items_reads_back_each_in_stored_order(
    framework: str,
) -> None:
    assert read(framework, "sam", uri(SAM_REVISION)) == ["\n".join(SAM_PLAN)]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_revision_in_a_shared_scope_is_read_by_every_member(framework: str) -> None:
    assert read(framework, "ana", uri(CLUB_REVISION)) == ["The club meets on Thursdays."]
    assert read(framework, "sam", uri(CLUB_REVISION)) == ["The club meets on Thursdays."]


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("revision", [ANA_REVISION, MIXED_REVISION])
def test_a_revision_with_an_item_the_reader_may_not_read_answers_as_a_uri_of_nothing(
    framework: str, revision: tuple[str, str]
) -> None:
    """Ana's own revision, and one whose items are in the club and in Sam's private scope."""
    [foreign] = read(framework, "sam" if revision == ANA_REVISION else "ana", uri(revision))
    [nowhere] = read(framework, "sam", uri(NOWHERE))
    code, message, data = error_of(foreign)
    assert (code, message.replace(uri(revision), uri(NOWHERE)), data) == error_of(nowhere)
    assert ANA_MARKER not in message


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize(
    "malformed",
    [
        "aizk://artifacts/not-a-uuid/contents/019820a4-0000-7000-8000-00000000c001",
        "aizk://artifacts/019820A1-0000-7000-8000-00000000A001/contents/019820a4-0000-7000-8000-00000000c001",
        "aizk://artifacts/019820a1-0000-7000-8000-00000000a001/contents/{}",
    ],
)
def test_a_malformed_uri_is_an_error_saying_what_the_uri_must_be(
    framework: str, malformed: str
) -> None:
    [answer] = read(framework, "sam", malformed)
    _, message, _ = error_of(answer)
    assert "malformed resource URI" in message
    assert "is not a UUID in canonical form" in message


def test_an_app_whose_revisions_live_elsewhere_passes_its_own_resolver() -> None:
    elsewhere = {SAM_REVISION: [StoredText(text="The whole plan.", scopes=["sam"])]}

    def revisions(artifact_id: str, artifact_content_id: str) -> Sequence[StoredText]:
        return elsewhere.get((artifact_id, artifact_content_id), [])

    retriever = LangChainScopedRetriever(vectorstore=langchain_store())
    server = recall_server(
        retriever, AizkEvidenceCompressor(), reader=reader("ana"), revisions=revisions
    )

    async def scenario() -> tuple[str | McpError, ...]:
        async with connected(server) as session:
            try:
                await session.read_resource(uri(SAM_REVISION))
            except McpError as error:
                return (error,)
            raise AssertionError("Ana read Sam's revision")

    [refused] = asyncio.run(scenario())
    _, message, _ = error_of(refused)
    assert message.endswith(f"Resource not found: {uri(SAM_REVISION)}")
    sam = recall_server(
        retriever, AizkEvidenceCompressor(), reader=reader("sam"), revisions=revisions
    )

    async def as_sam() -> str:
        async with connected(sam) as session:
            [content] = wire(await session.read_resource(uri(SAM_REVISION)))["contents"]
            text: str = content["text"]
            return text

    assert asyncio.run(as_sam()) == "The whole plan."


def test_the_template_is_listed_for_clients_to_find() -> None:
    async def scenario() -> list[str]:
        async with connected(made_with("langchain", reader=reader("sam"))) as session:
            listed = wire(await session.list_resource_templates())
            return [template["uriTemplate"] for template in listed["resourceTemplates"]]

    assert asyncio.run(scenario()) == [
        "aizk://artifacts/{artifact_id}/contents/{artifact_content_id}"
    ]
