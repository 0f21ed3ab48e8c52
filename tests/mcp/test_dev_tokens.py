"""The first hour over HTTP: examples/mcp_dev_tokens.py stands in for an identity provider on
127.0.0.1, and the example server, run against its keys, answers each reader its token names."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from aizk_integrations.mcp import JWTReaderVerifier
from tests.docs.pages import ROOT
from tests.mcp.sdk import session_at, wire

SCRIPT = ["examples/mcp_dev_tokens.py", "--port", "0", "--mcp-port", "0"]


@contextmanager
def running(*arguments: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """The script, started with `arguments`: the process and the first line it prints."""
    command = [sys.executable, *SCRIPT, *arguments]
    with subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        assert process.stdout is not None
        try:
            yield process, process.stdout.readline()
        finally:
            process.terminate()
            process.wait(timeout=60)


def _block(url: str, token: str) -> str:
    async def scenario() -> str:
        async with session_at(url, token) as session:
            result = wire(await session.call_tool("recall", {"query": "the reranker"}))
            assert not result.get("isError"), result
            return "".join(item["text"] for item in result["content"])

    return asyncio.run(scenario())


def test_the_example_server_answers_each_reader_a_dev_token_names() -> None:
    with running("--serve-example", "--json", "--reader", "sam", "--reader", "ana") as (_, line):
        trial: dict[str, Any] = json.loads(line)
        sam = _block(trial["url"], trial["tokens"]["sam"])
        ana = _block(trial["url"], trial["tokens"]["ana"])
        metadata = trial["url"].replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
        document = httpx.get(metadata, timeout=60).json()
    assert "retrieval-team" in sam  # Sam's team, from the organizations in Sam's token
    assert "retrieval-team" not in ana
    assert "book-club" in ana
    assert document["authorization_servers"] == [trial["issuer"]]  # no slash added


def test_the_script_says_loudly_it_is_for_local_trials_and_prints_what_to_run() -> None:
    with running("--reader", "ana") as (process, first):
        assert process.stdout is not None
        printed = [first]
        while "Serving the keys" not in printed[-1]:
            printed.append(process.stdout.readline())
        issuer = printed[0].removeprefix("issuer: ").strip()
        jwks_url = printed[1].removeprefix("jwks_url: ").strip()
        audience = printed[2].removeprefix("url: ").strip()
        token = printed[
            printed.index("token for ana (organizations: org-book-club, org-garden):\n") + 1
        ]
        verifier = JWTReaderVerifier(issuer=issuer, audience=audience, jwks_url=jwks_url)
        claims = verifier._verified_claims(token.strip())
        process.terminate()
        assert process.stderr is not None
        banner = process.stderr.readline()
    assert "FOR LOCAL TRIALS ONLY" in banner
    assert issuer.startswith("http://127.0.0.1:")
    assert claims["sub"] == "ana"
    assert claims["organizations"] == ["org-book-club", "org-garden"]
    command = next(line for line in printed if "examples/mcp_server.py --http" in line)
    assert f"--issuer {issuer} --jwks-url {jwks_url}" in command
    assert f"--audience {audience}" in command
