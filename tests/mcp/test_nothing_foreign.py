"""Nothing of another reader's anywhere: not in tool results, resource answers, errors, the
notifications the client receives, nor the server's logs (at DEBUG); and at the default level
the logs hold no evidence text at all."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from tests.mcp.corpus import (
    ANA_MARKER,
    ANA_REVISION,
    MIXED_REVISION,
    NOWHERE,
    SAM_MARKER,
    SAM_REVISION,
    reader,
    uri,
)
from tests.mcp.sdk import McpError, connected
from tests.mcp.servers import FRAMEWORKS, made_with

CALLS: list[dict[str, Any]] = [
    {"query": "the garden", "budget": 4096},
    {"query": "Ana's gate code"},
    {"query": "notes", "budget": 1},
    {"query": "notes", "budget": 16385},
    {"query": "notes", "budget": "lots"},
]
URIS = [uri(ANA_REVISION), uri(MIXED_REVISION), uri(NOWHERE), uri(SAM_REVISION), "aizk://x"]


def _everything_sam_is_sent(framework: str) -> list[str]:
    """Every answer, error and notification Sam's client gets for calls that reach for Ana's."""
    seen: list[str] = []

    async def noted(message: Any) -> None:
        seen.append(repr(message))

    async def scenario() -> None:
        server = made_with(framework, reader=reader("sam"))
        async with connected(server, logging_callback=noted, message_handler=noted) as session:
            for call in CALLS:
                seen.append(repr(await session.call_tool("recall", call)))
            for each in URIS:
                try:
                    seen.append(repr(await session.read_resource(each)))
                except McpError as error:
                    seen.append(repr(error.error))

    asyncio.run(scenario())
    return seen


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_no_answer_error_notification_or_debug_log_carries_another_readers_text(
    framework: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG):
        seen = _everything_sam_is_sent(framework)
    assert any(SAM_MARKER in each for each in seen)  # Sam's own evidence did arrive
    assert not [each for each in seen if ANA_MARKER in each]
    assert caplog.records  # the DEBUG log was captured
    logged = [record.getMessage() for record in caplog.records]
    assert not [line for line in logged if ANA_MARKER in line]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_at_the_default_log_level_the_server_logs_no_evidence_text(
    framework: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO):
        _everything_sam_is_sent(framework)
    assert caplog.records
    logged = [record.getMessage() for record in caplog.records]
    assert not [line for line in logged if SAM_MARKER in line or ANA_MARKER in line]
