"""The recall tool: the reader's block as text, the public JSON and counts as structured content,
and a budget outside 1 to the maximum refused as a tool error naming it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]

from aizk_integrations import RecallResult
from tests.mcp.corpus import ANA_MARKER, SAM_MARKER, reader
from tests.mcp.sdk import connected, wire
from tests.mcp.servers import FRAMEWORKS, made_with


class Result:
    """A tool result as the wire has it (`wire`), read the same on either major of the SDK."""

    def __init__(self, answered: dict[str, Any]) -> None:
        self.wire = answered
        self.isError = bool(answered.get("isError"))
        self.content: list[dict[str, Any]] = answered.get("content", [])
        self.structuredContent: dict[str, Any] | None = answered.get("structuredContent")

    def model_dump(self) -> dict[str, Any]:
        return self.wire


def recalled(framework: str, *calls: dict[str, Any], **settings: Any) -> list[Result]:
    async def scenario() -> list[Result]:
        server = made_with(framework, reader=reader("sam"), **settings)
        async with connected(server) as session:
            return [Result(wire(await session.call_tool("recall", call))) for call in calls]

    return asyncio.run(scenario())


def text_of(result: Result) -> str:
    assert all(item["type"] == "text" for item in result.content)
    return "".join(item["text"] for item in result.content)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_text_is_the_readers_block_and_the_structured_content_its_recall_result(
    framework: str,
) -> None:
    [result] = recalled(framework, {"query": "the reranker", "budget": 512})
    assert not result.isError
    assert result.structuredContent is not None
    recall = RecallResult.model_validate(result.structuredContent["recall"])
    assert text_of(result) == recall.to_markdown()
    assert SAM_MARKER in text_of(result)
    assert ANA_MARKER not in str(result.model_dump())
    counts = result.structuredContent["counts"]
    assert counts["kept"] == len(recall.evidence) > 0
    assert counts["budget"] == 512
    assert 0 < counts["tokens_used"] <= 512


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_budget_defaults_to_2048(framework: str) -> None:
    [result] = recalled(framework, {"query": "notes"})
    assert result.structuredContent is not None
    assert result.structuredContent["counts"]["budget"] == 2048


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_recall_that_keeps_nothing_has_no_content_items_and_still_its_counts(
    framework: str,
) -> None:
    [result] = recalled(framework, {"query": "notes", "budget": 1})
    assert not result.isError
    assert result.content == []
    assert result.structuredContent is not None
    assert result.structuredContent["recall"] == {"evidence": [], "shared_scopes": []}
    counts = result.structuredContent["counts"]
    assert (counts["kept"], counts["budget"]) == (0, 1)
    assert counts["cut_by_budget"] >= 1


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("budget", [0, -1, 16385, "text", True, 2.5, None])
def test_a_budget_outside_1_to_16384_is_a_tool_error_naming_it_and_the_server_keeps_serving(
    framework: str, budget: object
) -> None:
    refused, after = recalled(
        framework, {"query": "notes", "budget": budget}, {"query": "notes", "budget": 64}
    )
    assert refused.isError
    assert "budget must be a whole number of tokens from 1 to 16384" in text_of(refused)
    assert f"got {budget!r}" in text_of(refused)
    assert not after.isError
    assert SAM_MARKER in text_of(after)


def test_a_server_may_lower_the_most_a_recall_may_ask_for() -> None:
    refused, kept = recalled(
        "langchain", {"query": "n", "budget": 257}, {"query": "n", "budget": 256}, max_budget=256
    )
    assert refused.isError
    assert "from 1 to 256, got 257" in text_of(refused)
    assert not kept.isError


def test_the_tool_declares_its_budget_range_and_its_output_schema() -> None:
    async def scenario() -> Any:
        async with connected(made_with("langchain", reader=reader("sam"))) as session:
            return wire(await session.list_tools())["tools"]

    [tool] = asyncio.run(scenario())
    assert tool["name"] == "recall"
    budget = tool["inputSchema"]["properties"]["budget"]
    assert (budget["type"], budget["minimum"], budget["maximum"], budget["default"]) == (
        "integer",
        1,
        16384,
        2048,
    )
    assert tool["inputSchema"]["required"] == ["query"]
    assert set(tool["outputSchema"]["properties"]) == {"recall", "counts"}


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_no_tool_argument_can_name_a_reader(framework: str) -> None:
    [result] = recalled(
        framework, {"query": "the garden", "reader": "ana", "aizk_reader": "ana", "sub": "ana"}
    )
    assert ANA_MARKER not in str(result.model_dump())
    assert SAM_MARKER in text_of(result)


def test_a_server_is_given_exactly_one_of_a_local_reader_and_a_verifier() -> None:
    with pytest.raises(ValueError, match="exactly one of reader="):
        made_with("langchain")


@pytest.mark.parametrize("most", [0, 16385])
def test_a_maximum_budget_outside_1_to_16384_is_refused(most: int) -> None:
    with pytest.raises(ValueError, match=f"max_budget must be from 1 to 16384.*got {most}"):
        made_with("langchain", reader=reader("sam"), max_budget=most)


def test_a_llama_index_server_adds_no_handler_to_llama_indexs_root_dispatcher() -> None:
    """The counts come from the packing itself: nothing listens to LlamaIndex's events for the
    whole process."""
    root = get_dispatcher()
    before = list(root.event_handlers)
    [result] = recalled("llama_index", {"query": "notes", "budget": 1})
    assert root.event_handlers == before
    assert not [each for each in before if type(each).__module__.startswith("aizk_integrations")]
    assert result.structuredContent is not None
    assert result.structuredContent["counts"]["cut_by_budget"] >= 1
