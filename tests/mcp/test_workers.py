"""Stateless over HTTP, so it scales out: two uvicorn worker processes behind one port answer a
thousand concurrent recalls of two readers, each for the reader its token names."""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.docs.pages import ROOT
from tests.mcp.corpus import ANA_MARKER, SAM_MARKER
from tests.mcp.http import ACCEPT
from tests.mcp.tokens import KEY, claims, jwks_served, signed
from tests.serving import PATIENCE, free_port

CALLS = 1000
AT_ONCE = 50
MARKERS = {"sam": SAM_MARKER, "ana": ANA_MARKER}


@pytest.fixture(scope="module")
def two_workers() -> Iterator[str]:
    port = free_port()
    audience = f"http://127.0.0.1:{port}/mcp"
    with jwks_served(KEY) as jwks_url:
        env = {**os.environ, "AIZK_MCP_AUDIENCE": audience, "AIZK_MCP_JWKS_URL": jwks_url}
        command = [sys.executable, "-m", "uvicorn", "--factory", "tests.mcp.worker_app:app"]
        command += ["--workers", "2", "--host", "127.0.0.1", "--port", str(port)]
        command += ["--log-level", "warning", "--timeout-keep-alive", str(PATIENCE)]
        command += ["--timeout-worker-healthcheck", str(PATIENCE)]
        process = subprocess.Popen(command, cwd=ROOT, env=env)
        try:
            _wait_until_serving(audience, process)
            yield audience
        finally:
            process.terminate()
            process.wait(timeout=30)


def _wait_until_serving(audience: str, process: subprocess.Popen[bytes]) -> None:
    metadata = audience.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, "uvicorn exited"
        try:
            if httpx.get(metadata, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError("uvicorn --workers 2 did not start")


# 50 to 70 s here, most of it two worker processes importing LangChain and serving: the slow job.
@pytest.mark.slow
def test_a_thousand_concurrent_recalls_on_two_workers_each_answer_their_own_reader(
    two_workers: str,
) -> None:
    tokens = {user: signed(KEY, claims(two_workers, user)) for user in MARKERS}
    readers = [random.Random(n).choice(list(MARKERS)) for n in range(CALLS)]

    async def recall(http: httpx.AsyncClient, gate: asyncio.Semaphore, n: int) -> bool:
        user = readers[n]
        body = {
            "jsonrpc": "2.0",
            "id": n,
            "method": "tools/call",
            "params": {"name": "recall", "arguments": {"query": f"notes {n}", "budget": 256}},
        }
        headers = {**ACCEPT, "authorization": f"Bearer {tokens[user]}"}
        async with gate:
            answer = await http.post(two_workers, json=body, headers=headers)
        assert answer.status_code == 200, answer.text
        text = answer.json()["result"]["content"][0]["text"]
        other = MARKERS["ana" if user == "sam" else "sam"]
        return MARKERS[user] in text and other not in text

    async def scenario() -> list[bool]:
        gate = asyncio.Semaphore(AT_ONCE)
        limits = httpx.Limits(max_connections=AT_ONCE)
        async with httpx.AsyncClient(timeout=60, limits=limits) as http:
            return await asyncio.gather(*(recall(http, gate, n) for n in range(CALLS)))

    answered = asyncio.run(scenario())
    assert len(answered) == CALLS
    assert answered.count(False) == 0  # no wrong-reader answer
    assert set(readers) == set(MARKERS)
