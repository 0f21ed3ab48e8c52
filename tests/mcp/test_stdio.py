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

from mcp import StdioServerParameters

from tests.docs.pages import ROOT
from tests.mcp.sdk import stdio_session, wire

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
            async with stdio_session(parameters, log) as session:
                await session.call_tool("recall", {"query": "reranker", "budget": 0})  # logged
                called = await session.call_tool("recall", {"query": "reranker", "budget": 4096})
                result = wire(called)
                assert not result.get("isError")
                structured = result["structuredContent"]
                text = "".join(item["text"] for item in result["content"])
                uris = [e["resource_uri"] for e in structured["recall"]["evidence"]]
                [first] = [each for each in uris if each][:1]
                [content] = wire(await session.read_resource(first))["contents"]
                return text, structured, content["text"]

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
    # The server's log was captured: mcp 1.x logs each request, 2.x each refused call.
    assert "CallToolRequest" in logged or "Tool 'recall' failed" in logged
    assert not any(note["text"][:30] in logged for note in NOTES)
