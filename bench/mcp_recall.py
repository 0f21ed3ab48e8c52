"""What the MCP boundary costs a recall: the `recall` tool over streamable HTTP, side by side
with the same scoped retrieval and packing called in-process, and with an MCP tool written by
hand that asks the store with its own filter.

One shared LangChain `InMemoryVectorStore` holds 2,000 notes of 20-120 words by 20 readers (each
owns 5%). Each request packs to 2,048 tokens for one of two readers, in turn. Three ways, every
row measured in the same run, the median time per request:

* in-process: `AizkEvidenceRetriever(base_retriever=AizkScopedRetriever(vectorstore=store))`,
  the reader named in the request's config;
* MCP: `recall_server(...)` over that retriever, served by uvicorn on 127.0.0.1, each request a
  stateless POST of `tools/call` with the reader's bearer JWT (verified against a JWKS served
  on 127.0.0.1);
* hand-written MCP: a FastMCP tool behind the same token verification that asks the store once
  with a filter function for "every scope is the reader's" for exactly what the budget took in
  the in-process run, and packs with `pack` and `RecallResult`.

Goal: MCP within 1.5x of the hand-written MCP tool; what HTTP and tokens add over in-process is
printed, not judged.

    python bench/mcp_recall.py            # full run
    python bench/mcp_recall.py --quick    # a few requests, to keep the script from rotting (CI)

(It is not `bench/mcp.py`: run as a script, that name would shadow the `mcp` SDK it imports.)
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence

import httpx
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.runnables import RunnableConfig
from langchain_core.vectorstores import InMemoryVectorStore
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.settings import AuthSettings
from mcp.server.fastmcp import FastMCP
from pydantic import AnyHttpUrl

from aizk_integrations import Candidate, RecallResult, ScopeDirectory, pack, scope_metadata
from aizk_integrations.langchain import (
    AizkEvidenceCompressor,
    AizkEvidenceRetriever,
    AizkScopedRetriever,
)
from aizk_integrations.mcp import JWTReaderVerifier, recall_server
from tests.mcp.tokens import ISSUER, KeyPair, claims, jwks_served, signed
from tests.serving import listening, port_of, serving

BUDGET = 2048
READERS = ("reader-00", "reader-01")
WORDS = ("reranker", "ablation", "garden", "twine", "club", "thursday", "sweep", "budget")


def corpus(size: int) -> InMemoryVectorStore:
    chance = random.Random(0)
    store = InMemoryVectorStore(embedding=DeterministicFakeEmbedding(size=64))
    notes = [
        Document(
            " ".join(chance.choice(WORDS) for _ in range(chance.randint(20, 120))),
            metadata=scope_metadata(f"reader-{n % 20:02d}"),
        )
        for n in range(size)
    ]
    store.add_documents(notes)
    return store


def hand_written(store: InMemoryVectorStore, verifier: JWTReaderVerifier, need: int) -> FastMCP:
    """An MCP tool as one would write it by hand: the store's filter, then the packer."""
    server = FastMCP(
        "hand-written",
        token_verifier=verifier,
        auth=AuthSettings(
            issuer_url=AnyHttpUrl(verifier.issuer),
            resource_server_url=AnyHttpUrl(verifier.audience),
            validate_token_resource=True,
        ),
        stateless_http=True,
        json_response=True,
    )

    @server.tool()
    async def recall(query: str, budget: int = BUDGET) -> str:
        access = get_access_token()
        assert access is not None  # the SDK's middleware let the request through
        assert access.claims is not None
        reader = verifier.reader_of(access.claims)
        ids = set(reader.scopes)

        def readable(document: Document) -> bool:
            return set(document.metadata["scopes"]) <= ids

        found = await store.asimilarity_search(query, k=need, filter=readable)
        ranked = [Candidate(line=d.page_content, scopes=d.metadata["scopes"]) for d in found]
        return RecallResult.from_candidates(pack(ranked, budget), reader).to_markdown()

    return server


Call = Callable[[int, httpx.AsyncClient], Awaitable[object]]


def timed(requests: int, call: Call) -> float:
    """The median seconds of `requests` calls, after one warm-up call, over one HTTP client
    (its connections kept alive, as a client's are)."""

    async def run() -> float:
        async with httpx.AsyncClient(timeout=60) as http:
            await call(-1, http)
            times = []
            for n in range(requests):
                start = time.perf_counter()
                await call(n, http)
                times.append(time.perf_counter() - start)
        return statistics.median(times)

    return asyncio.run(run())


def tool_call(url: str, tokens: dict[str, str]) -> Call:
    async def call(n: int, http: httpx.AsyncClient) -> object:
        user = READERS[n % 2]
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "recall", "arguments": {"query": f"plan {n}", "budget": BUDGET}},
        }
        headers = {
            "accept": "application/json, text/event-stream",
            "authorization": f"Bearer {tokens[user]}",
        }
        answer = await http.post(url, json=body, headers=headers)
        answer.raise_for_status()
        return answer.json()

    return call


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few requests; for CI")
    args = parser.parse_args(argv)
    logging.disable(logging.INFO)  # the servers' request lines; warnings still show
    requests = 5 if args.quick else 60
    store = corpus(400 if args.quick else 2000)
    readers = {user: ScopeDirectory.for_caller(user, {}) for user in READERS}
    retriever = AizkScopedRetriever(vectorstore=store)
    compressor = AizkEvidenceCompressor(budget=BUDGET)
    packed = AizkEvidenceRetriever(base_retriever=retriever, compressor=compressor)

    async def in_process(n: int, http: httpx.AsyncClient) -> object:
        config: RunnableConfig = {"configurable": {"aizk_reader": readers[READERS[n % 2]]}}
        return await packed.ainvoke(f"plan {n}", config=config)

    [block] = asyncio.run(
        packed.ainvoke("plan", config={"configurable": {"aizk_reader": readers[READERS[0]]}})
    )
    need = block.metadata["aizk_counts"]["kept"] + 1
    key = KeyPair.new("k")
    rows: list[tuple[str, float]] = [("in-process", timed(requests, in_process))]
    with jwks_served(key) as jwks_url:
        builds: list[tuple[str, Callable[[JWTReaderVerifier], FastMCP]]] = [
            ("MCP recall_server", lambda v: recall_server(retriever, compressor, auth=v)),
            ("hand-written MCP tool", lambda v: hand_written(store, v, need)),
        ]
        for name, build in builds:
            with listening() as sock:
                audience = f"http://127.0.0.1:{port_of(sock)}/mcp"
                verifier = JWTReaderVerifier(issuer=ISSUER, audience=audience, jwks_url=jwks_url)
                tokens = {user: signed(key, claims(audience, user)) for user in READERS}
                with serving(build(verifier).streamable_http_app(), sock):
                    rows.append((name, timed(requests, tool_call(audience, tokens))))
    times = dict(rows)
    print(f"{requests} requests each, budget {BUDGET}, {len(store.store)} notes, 20 readers")
    print(f"{'way':<24}{'median ms':>10}")
    for name, seconds in rows:
        print(f"{name:<24}{seconds * 1000:>10.2f}")
    over_hand = times["MCP recall_server"] / times["hand-written MCP tool"]
    over_process = times["MCP recall_server"] / times["in-process"]
    print(f"MCP / hand-written MCP: {over_hand:.2f}x (goal <= 1.5x)")
    print(f"MCP / in-process:       {over_process:.2f}x (HTTP, JSON-RPC and the token)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
