"""Over stdio one local user runs the server, as a desktop assistant starts it: the example,
run as the docs say, answers the SDK's own client for the reader fixed at start, and logs no
evidence text."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import TextContent, TextResourceContents

from tests.docs.pages import ROOT

NOTES = json.loads((ROOT / "examples" / "corpus.json").read_text(encoding="utf-8"))["notes"]


def _served_over_stdio(reader: str, errlog: Path) -> tuple[str, dict[str, object], str]:
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["examples/mcp_server.py", "--reader", reader],
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "10000"},  # the SDK's rich log lines, unwrapped
    )

    async def scenario() -> tuple[str, dict[str, object], str]:
        with errlog.open("w") as log:
            async with (
                stdio_client(parameters, errlog=log) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                result = await session.call_tool("recall", {"query": "reranker", "budget": 4096})
                assert not result.isError
                assert result.structuredContent is not None
                text = "".join(c.text for c in result.content if isinstance(c, TextContent))
                uris = [e["resource_uri"] for e in result.structuredContent["recall"]["evidence"]]
                [first] = [each for each in uris if each][:1]
                [content] = (await session.read_resource(first)).contents
                assert isinstance(content, TextResourceContents)
                return text, result.structuredContent, content.text

    return asyncio.run(scenario())


def test_over_stdio_the_reader_is_the_one_fixed_at_start_and_the_log_holds_no_evidence() -> None:
    with tempfile.TemporaryDirectory() as folder:
        errlog = Path(folder) / "server.log"
        block, structured, revision = _served_over_stdio("sam", errlog)
        logged = errlog.read_text()
    assert "retrieval-team" in block  # Sam's team
    assert "garden-share" not in block  # Ana's garden share
    ana_only = [n["text"] for n in NOTES if n["metadata"].get("scopes") == ["ana"]]
    assert ana_only
    assert not any(text in block or text in json.dumps(structured) for text in ana_only)
    assert revision in {note["text"] for note in NOTES}
    assert "Processing request of type CallToolRequest" in logged  # the log was captured
    assert not any(note["text"][:30] in logged for note in NOTES)
