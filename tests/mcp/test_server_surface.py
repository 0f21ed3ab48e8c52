"""What a client sees of the server itself: budgets read as JSON Schema reads an integer, the
server named with this package's version, and a refused resource saying its reason once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import aizk_integrations
from tests.mcp.corpus import ANA_REVISION, NOWHERE, SAM_MARKER, reader, uri
from tests.mcp.http import INITIALIZE, Served, posted
from tests.mcp.sdk import McpError, wire
from tests.mcp.servers import FRAMEWORKS, connected, made_with


def called(framework: str, *budgets: object) -> list[dict[str, Any]]:
    async def scenario() -> list[dict[str, Any]]:
        async with connected(made_with(framework, reader=reader("sam"))) as session:
            return [
                wire(await session.call_tool("recall", {"query": "notes", "budget": budget}))
                for budget in budgets
            ]

    return asyncio.run(scenario())


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_budget_with_no_fraction_is_the_integer_json_schema_reads(framework: str) -> None:
    for result, budget in zip(
        called(framework, 2048.0, 1.0, 16384.0), (2048, 1, 16384), strict=True
    ):
        assert not result.get("isError"), result
        assert result["structuredContent"]["counts"]["budget"] == budget
    [whole] = called(framework, 512.0)
    assert SAM_MARKER in whole["content"][0]["text"]


@pytest.mark.parametrize("budget", [2048.5, True, False, "2048", 16385.0, 0.0, [2048]])
def test_a_budget_json_schema_would_not_read_as_an_integer_in_range_is_a_tool_error(
    budget: object,
) -> None:
    [result] = called("langchain", budget)
    assert result["isError"]
    [said] = [item["text"] for item in result["content"]]
    assert "budget must be a whole number of tokens from 1 to 16384" in said
    assert said.count("budget must be") == 1


def test_the_server_is_named_with_this_packages_version(served: Served) -> None:
    answer = posted(served.url, served.token("sam"), INITIALIZE)
    info = answer.json()["result"]["serverInfo"]
    assert (info["name"], info["version"]) == ("aizk", aizk_integrations.__version__)


def _refusals(*uris: str) -> list[str]:
    async def scenario() -> list[str]:
        said: list[str] = []
        async with connected(made_with("langchain", reader=reader("sam"))) as session:
            for each in uris:
                with pytest.raises(McpError) as refused:
                    await session.read_resource(each)
                said.append(refused.value.error.message)
        return said

    return asyncio.run(scenario())


def test_a_refused_resource_says_its_reason_once() -> None:
    malformed = uri(NOWHERE).upper().replace("AIZK://ARTIFACTS/", "aizk://artifacts/")
    malformed = malformed.replace("/CONTENTS/", "/contents/")
    foreign, nowhere, bad = _refusals(uri(ANA_REVISION), uri(NOWHERE), malformed)
    assert nowhere == f"Resource not found: {uri(NOWHERE)}"
    assert foreign == f"Resource not found: {uri(ANA_REVISION)}"
    assert bad.startswith("malformed resource URI: artifact_id")
    for message in (foreign, nowhere, bad):
        assert "Error creating resource" not in message
