"""What the MCP boundary costs: `recall_server` over streamable HTTP, side by side, in one run,
with MCP tools and resources written by hand, on LangChain's in-memory store and on Postgres; and
what a revision read costs as the store grows.

Each request is a stateless POST with a reader's bearer JWT (verified against a JWKS served on
127.0.0.1), alternating between two of the 20 readers (each owns 5% of the notes, every two
notes one revision). Every row is the median time per request, measured in the same run:

* recall: `recall_server(...)`'s `recall` against a hand-written FastMCP tool behind the same
  token verification that asks the store once with its own filter (in memory: a filter
  function for "every scope is the reader's"; on Postgres: its own SQL as the app's role, under
  the same row-level security) for what the budget took, and packs with `pack`;
* resource: a read of one of the reader's revisions, against a hand-written resource (in
  memory: a dict from revision to items built at start; on Postgres: its own SQL under the
  policy, no check for a mixed revision);
* no-op: a tool that does nothing, on the same server: what the SDK's stateless HTTP and the
  token cost every request.

Goal: recall and resource within 1.2x of the hand-written ones. Then, for each in-process store
(LangChain's `InMemoryVectorStore` and FAISS, LlamaIndex's default `SimpleVectorStore` and
FAISS), a revision read (the store's lookup and the reader's check, in process, no transport) at
1,000 and at 20,000 notes, for the same revision: the growth ratio, 1.0 for a read that costs
what the revision costs.

    python bench/mcp_recall.py            # full run
    python bench/mcp_recall.py --quick    # a few requests and small stores, to keep it running

(It is not `bench/mcp.py`: run as a script, that name would shadow the `mcp` SDK it imports.)
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
import statistics
import time
import uuid
import warnings
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

import httpx
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from langchain_postgres import PGVector
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores import SimpleVectorStore
from llama_index.vector_stores.faiss import FaissVectorStore
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.settings import AuthSettings
from mcp.server.fastmcp import FastMCP
from pydantic import AnyHttpUrl
from sqlalchemy import Engine, create_engine, text

from aizk_integrations import Candidate, RecallResult, ScopeDirectory, pack, scope_metadata
from aizk_integrations._stores.postgres.condition import reader_ids
from aizk_integrations.langchain import (
    AizkEvidenceCompressor,
    AizkEvidenceRetriever,
    AizkScopedRetriever,
    postgres_setup,
)
from aizk_integrations.llama_index import AizkEvidencePostprocessor
from aizk_integrations.mcp import JWTReaderVerifier, recall_server
from aizk_integrations.mcp._retrieval import retrieval_for
from tests.adapters.postgres_stores import app_database
from tests.mcp.tokens import ISSUER, KeyPair, claims, jwks_served, signed
from tests.postgres import throwaway_server
from tests.serving import listening, port_of, serving

warnings.filterwarnings("ignore", message="`langchain-community` is being sunset")
import faiss  # noqa: E402
from langchain_community.vectorstores import FAISS  # noqa: E402

BUDGET = 2048
READERS = ("reader-00", "reader-01")
WORDS = ("reranker", "ablation", "garden", "twine", "club", "thursday", "sweep", "budget")
DIMENSIONS = 64
APP = "aizk_bench_app"


def revision_of(n: int) -> tuple[str, str]:
    """Every two notes of a reader are one revision: notes n and n + 20 share it."""
    pair = n % 20 + 20 * (n // 40)
    return str(uuid.UUID(int=2**64 + pair)), str(uuid.UUID(int=2**65 + pair))


def notes(size: int) -> list[Document]:
    chance = random.Random(0)
    return [
        Document(
            " ".join(chance.choice(WORDS) for _ in range(chance.randint(20, 120))),
            id=str(uuid.UUID(int=n + 1)),
            metadata={
                **scope_metadata(f"reader-{n % 20:02d}"),
                "artifact_id": revision_of(n)[0],
                "artifact_content_id": revision_of(n)[1],
            },
        )
        for n in range(size)
    ]


def uri(revision: tuple[str, str]) -> str:
    return f"aizk://artifacts/{revision[0]}/contents/{revision[1]}"


# -- the servers ---------------------------------------------------------------------------------


def secured(name: str, verifier: JWTReaderVerifier) -> FastMCP:
    """A FastMCP server behind the same token verification as `recall_server`'s."""
    return FastMCP(
        name,
        token_verifier=verifier,
        auth=AuthSettings(
            issuer_url=AnyHttpUrl(verifier.issuer),
            resource_server_url=AnyHttpUrl(verifier.audience),
            validate_token_resource=True,
        ),
        stateless_http=True,
        json_response=True,
    )


def request_reader(verifier: JWTReaderVerifier) -> ScopeDirectory:
    access = get_access_token()
    assert access is not None  # the SDK's middleware checked it
    assert access.claims is not None
    return verifier.reader_of(access.claims)


def packed(found: Sequence[tuple[str, Any]], reader: ScopeDirectory, budget: int) -> str:
    ranked = [Candidate(line=line, scopes=scopes) for line, scopes in found]
    return RecallResult.from_candidates(pack(ranked, budget), reader).to_markdown()


def hand_written_in_memory(
    store: InMemoryVectorStore, verifier: JWTReaderVerifier, need: int
) -> FastMCP:
    """A tool and a resource as one would write them by hand over the in-memory store."""
    server = secured("hand-written", verifier)
    revisions: dict[tuple[str, str], list[tuple[str, list[str]]]] = {}
    for item in store.store.values():
        metadata = item["metadata"]
        key = (metadata["artifact_id"], metadata["artifact_content_id"])
        revisions.setdefault(key, []).append((item["text"], metadata["scopes"]))

    @server.tool()
    async def recall(query: str, budget: int = BUDGET) -> str:
        ids = set(request_reader(verifier).scopes)

        def readable(document: Document) -> bool:
            return set(document.metadata["scopes"]) <= ids

        found = await store.asimilarity_search(query, k=need, filter=readable)
        reader = request_reader(verifier)
        return packed([(d.page_content, d.metadata["scopes"]) for d in found], reader, budget)

    @server.resource("aizk://artifacts/{artifact_id}/contents/{artifact_content_id}")
    async def revision(artifact_id: str, artifact_content_id: str) -> str:
        items = revisions.get((artifact_id, artifact_content_id), [])
        ids = set(request_reader(verifier).scopes)
        if not items or not all(set(scopes) <= ids for _, scopes in items):
            raise ValueError("Resource not found")
        return "\n".join(text for text, _ in items)

    return server


HAND_SEARCH = (
    "SELECT e.document, e.cmetadata FROM langchain_pg_embedding e"
    " JOIN langchain_pg_collection c ON e.collection_id = c.uuid WHERE c.name = :collection"
    " ORDER BY e.embedding <=> CAST(:embedding AS vector) LIMIT :top"
)
HAND_REVISION = (
    "SELECT e.document, e.cmetadata FROM langchain_pg_embedding e"
    " WHERE e.cmetadata ->> 'artifact_id' = :artifact_id"
    " AND e.cmetadata ->> 'artifact_content_id' = :artifact_content_id ORDER BY e.id"
)
SET_READER = "SELECT set_config('aizk.reader_ids', :reader_ids, true)"


def hand_written_postgres(engine: Engine, verifier: JWTReaderVerifier, need: int) -> FastMCP:
    """A tool and a resource as one would write them by hand over PGVector's table, as the
    app's role under the reader policy (the rows it may not read are the database's to hide)."""
    server = secured("hand-written", verifier)
    embedding = DeterministicFakeEmbedding(size=DIMENSIONS)

    def rows(sql: str, reader: ScopeDirectory, **values: Any) -> list[Any]:
        with engine.begin() as connection:
            connection.execute(text(SET_READER), {"reader_ids": reader_ids(reader.scopes)})
            return list(connection.execute(text(sql), values).all())

    @server.tool()
    async def recall(query: str, budget: int = BUDGET) -> str:
        reader = request_reader(verifier)
        vector = "[" + ",".join(map(str, embedding.embed_query(query))) + "]"
        found = await asyncio.to_thread(
            rows, HAND_SEARCH, reader, collection="bench", embedding=vector, top=need
        )
        return packed([(row.document, row.cmetadata["scopes"]) for row in found], reader, budget)

    @server.resource("aizk://artifacts/{artifact_id}/contents/{artifact_content_id}")
    async def revision(artifact_id: str, artifact_content_id: str) -> str:
        reader = request_reader(verifier)
        found = await asyncio.to_thread(
            rows,
            HAND_REVISION,
            reader,
            artifact_id=artifact_id,
            artifact_content_id=artifact_content_id,
        )
        if not found:
            raise ValueError("Resource not found")
        return "\n".join(row.document for row in found)

    return server


def with_noop(server: FastMCP) -> FastMCP:
    """`server` with a tool that does nothing: the cost of the transport and the token."""

    @server.tool()
    async def noop() -> str:
        return ""

    return server


# -- the requests --------------------------------------------------------------------------------

Call = Callable[[int, httpx.AsyncClient], Awaitable[object]]


def timed(requests: int, calls: Sequence[Call]) -> list[float]:
    """The median seconds of each of `calls`, taken in turn request by request (so a busy
    machine slows them alike), after two warm-up rounds, each over one HTTP client."""

    async def run() -> list[float]:
        clients = [httpx.AsyncClient(timeout=60) for _ in calls]
        try:
            times: list[list[float]] = [[] for _ in calls]
            for n in range(-2, requests):
                for call, http, taken in zip(calls, clients, times, strict=True):
                    start = time.perf_counter()
                    await call(n, http)
                    if n >= 0:
                        taken.append(time.perf_counter() - start)
            return [statistics.median(taken) for taken in times]
        finally:
            for http in clients:
                await http.aclose()

    return asyncio.run(run())


def posted(url: str, tokens: dict[str, str], method: str, params: Callable[[int], Any]) -> Call:
    async def call(n: int, http: httpx.AsyncClient) -> object:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params(n)}
        headers = {
            "accept": "application/json, text/event-stream",
            "authorization": f"Bearer {tokens[READERS[n % 2]]}",
        }
        answer = await http.post(url, json=body, headers=headers)
        answer.raise_for_status()
        result = answer.json()
        assert "error" not in result, result
        assert not result["result"].get("isError"), result
        return result

    return call


def recall_params(n: int) -> Any:
    return {"name": "recall", "arguments": {"query": f"plan {n}", "budget": BUDGET}}


def noop_params(n: int) -> Any:
    return {"name": "noop", "arguments": {}}


def resource_params(n: int) -> Any:
    return {"uri": uri(revision_of(n % 2 + 40 * (abs(n) % 7)))}


Row = tuple[str, float]


def compared(
    jwks_url: str,
    key: KeyPair,
    requests: int,
    ours: Callable[[JWTReaderVerifier], FastMCP],
    theirs: Callable[[JWTReaderVerifier], FastMCP],
) -> list[Row]:
    """recall, resource and no-op on our server; recall and resource on the hand-written one;
    both served at once, and each way's requests taken in turn with the others'."""
    with ExitStack() as stack:
        urls: list[str] = []
        tokens: list[dict[str, str]] = []
        for build in (lambda v: with_noop(ours(v)), theirs):
            sock = stack.enter_context(listening())
            audience = f"http://127.0.0.1:{port_of(sock)}/mcp"
            verifier = JWTReaderVerifier(issuer=ISSUER, audience=audience, jwks_url=jwks_url)
            tokens.append({user: signed(key, claims(audience, user)) for user in READERS})
            stack.enter_context(serving(build(verifier).streamable_http_app(), sock))
            urls.append(audience)
        ways = [
            ("recall_server recall", 0, "tools/call", recall_params),
            ("hand-written recall", 1, "tools/call", recall_params),
            ("recall_server resource", 0, "resources/read", resource_params),
            ("hand-written resource", 1, "resources/read", resource_params),
            ("recall_server no-op tool", 0, "tools/call", noop_params),
        ]
        calls = [posted(urls[at], tokens[at], method, params) for _, at, method, params in ways]
        return list(zip([name for name, *_ in ways], timed(requests, calls), strict=True))


def need_of(retriever: Any, compressor: AizkEvidenceCompressor) -> int:
    """How many documents the budget took for a reader: what the hand-written tool asks for."""
    evidence = AizkEvidenceRetriever(base_retriever=retriever, compressor=compressor)
    reader = ScopeDirectory.for_caller(READERS[0], {})
    [block] = evidence.invoke("plan", config={"configurable": {"aizk_reader": reader}})
    need: int = block.metadata["aizk_counts"]["kept"] + 1
    return need


def in_memory(size: int, requests: int, jwks_url: str, key: KeyPair) -> list[Row]:
    store = InMemoryVectorStore(embedding=DeterministicFakeEmbedding(size=DIMENSIONS))
    store.add_documents(notes(size))
    retriever = AizkScopedRetriever(vectorstore=store)
    compressor = AizkEvidenceCompressor(budget=BUDGET)
    need = need_of(retriever, compressor)
    return compared(
        jwks_url,
        key,
        requests,
        lambda v: recall_server(retriever, compressor, auth=v),
        lambda v: hand_written_in_memory(store, v, need),
    )


@contextmanager
def postgres(size: int) -> Iterator[tuple[Engine, PGVector]]:
    """PGVector's tables on a throwaway server, set up, and an engine of the app's role."""
    with ExitStack() as stack:
        server = stack.enter_context(throwaway_server())
        database = stack.enter_context(app_database(server, "aizk_bench", APP))
        owner = create_engine(database.url())
        stack.callback(owner.dispose)
        store = PGVector(
            embeddings=DeterministicFakeEmbedding(size=DIMENSIONS),
            connection=owner,
            collection_name="bench",
            embedding_length=DIMENSIONS,
        )
        documents = notes(size)
        store.add_documents(documents, ids=[document.id or "" for document in documents])
        with owner.begin() as connection:
            for statement in postgres_setup(store, role=APP):
                connection.exec_driver_sql(statement)
            connection.exec_driver_sql("ANALYZE langchain_pg_embedding")
        app = create_engine(database.url(user=APP), pool_size=10)
        stack.callback(app.dispose)
        as_app = PGVector(
            embeddings=DeterministicFakeEmbedding(size=DIMENSIONS),
            connection=app,
            collection_name="bench",
        )
        yield app, as_app


def on_postgres(size: int, requests: int, jwks_url: str, key: KeyPair) -> list[Row]:
    with postgres(size) as (engine, store):
        retriever = AizkScopedRetriever(vectorstore=store)
        compressor = AizkEvidenceCompressor(budget=BUDGET)
        need = need_of(retriever, compressor)
        return compared(
            jwks_url,
            key,
            requests,
            lambda v: recall_server(retriever, compressor, auth=v),
            lambda v: hand_written_postgres(engine, v, need),
        )


# -- revision reads as the store grows -----------------------------------------------------------


def built(kind: str, size: int) -> tuple[Any, Any]:
    """The notes in an in-process store of `kind`: the app's retriever (or index) and packer."""
    documents = notes(size)
    if kind.startswith("langchain"):
        embedding = DeterministicFakeEmbedding(size=DIMENSIONS)
        store: VectorStore
        if kind == "langchain in-memory":
            store = InMemoryVectorStore(embedding=embedding)
            store.add_documents(documents)
        else:
            store = FAISS.from_documents(documents, embedding)
        return AizkScopedRetriever(vectorstore=store), AizkEvidenceCompressor()
    vector_store = (
        SimpleVectorStore()
        if kind == "llama-index simple (default)"
        else FaissVectorStore(faiss_index=faiss.IndexFlatL2(8))
    )
    nodes = [
        TextNode(id_=d.id, text=d.page_content, metadata=d.metadata, embedding=[0.0] * 8)
        for d in documents
    ]
    index = VectorStoreIndex(
        nodes,
        storage_context=StorageContext.from_defaults(vector_store=vector_store),
        embed_model=MockEmbedding(embed_dim=8),
    )
    return index, AizkEvidencePostprocessor()


def read_time(kind: str, size: int, reads: int) -> tuple[float, float, float]:
    """The first revision read (which indexes an in-process store), the median of the reads
    after it, and the median of a walk of every item for the same revision (what a lookup by
    metadata costs a store that has none: the previous version's read)."""
    retriever, packer = built(kind, size)
    read = retrieval_for(retriever, packer).revisions()
    reader = ScopeDirectory.for_caller(READERS[0], {})
    revision = revision_of(0)
    walk = walker(retriever)

    async def run() -> tuple[float, float, float]:
        start = time.perf_counter()
        first = await read(revision, reader)
        built_in = time.perf_counter() - start
        assert len(first) == 2
        times, walks = [], []
        for _ in range(reads):
            start = time.perf_counter()
            await read(revision, reader)
            times.append(time.perf_counter() - start)
        for _ in range(max(3, reads // 10)):
            start = time.perf_counter()
            assert len(walk(revision)) == 2
            walks.append(time.perf_counter() - start)
        return built_in, statistics.median(times), statistics.median(walks)

    return asyncio.run(run())


def walker(retriever: Any) -> Callable[[tuple[str, str]], list[str]]:
    """A revision's texts found by walking every item of the store, through its public parts."""

    def of(metadata: Any, revision: tuple[str, str]) -> bool:
        ids = (metadata.get("artifact_id"), metadata.get("artifact_content_id"))
        return tuple(str(uuid.UUID(each)) for each in ids) == revision

    if isinstance(retriever, VectorStoreIndex):
        return lambda revision: [
            node.get_content()
            for node in retriever.docstore.docs.values()
            if of(node.metadata, revision)
        ]
    store = retriever.vectorstore
    if isinstance(store, InMemoryVectorStore):
        return lambda revision: [
            item["text"] for item in store.store.values() if of(item["metadata"], revision)
        ]
    return lambda revision: [
        document.page_content
        for document in store.get_by_ids(list(store.index_to_docstore_id.values()))
        if of(document.metadata, revision)
    ]


GROWING = (
    "langchain in-memory",
    "langchain faiss",
    "llama-index simple (default)",
    "llama-index faiss",
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few requests, small stores")
    args = parser.parse_args(argv)
    logging.disable(logging.INFO)  # the servers' request lines; warnings still show
    requests = 5 if args.quick else 60
    size = 400 if args.quick else 2000
    small, large = (100, 2_000) if args.quick else (1_000, 20_000)
    key = KeyPair.new("k")
    with jwks_served(key) as jwks_url:
        memory = dict(in_memory(size, requests, jwks_url, key))
        database = dict(on_postgres(size, requests, jwks_url, key))
    print(f"{requests} requests each, budget {BUDGET}, {size} notes, 20 readers, over HTTP")
    for title, times in (("in-memory store", memory), ("Postgres (PGVector, app role)", database)):
        print(f"\n{title:<34}{'median ms':>10}")
        for name, seconds in times.items():
            print(f"  {name:<32}{seconds * 1000:>10.2f}")
        for what in ("recall", "resource"):
            ratio = times[f"recall_server {what}"] / times[f"hand-written {what}"]
            print(f"  {what} / hand-written {what}: {ratio:.2f}x (goal <= 1.2x)")
    print(f"\nrevision read in process, {small:,} vs {large:,} notes, the same revision (ms)")
    print(
        f"{'store':<30}{'first':>9}{'then':>8}{'walk':>9}{'first':>9}{'then':>8}{'walk':>9}"
        f"{'growth':>8}{'walk growth':>13}"
    )
    for kind in GROWING:
        first_small, then_small, walk_small = read_time(kind, small, 50)
        first_large, then_large, walk_large = read_time(kind, large, 50)
        print(
            f"{kind:<30}{first_small * 1000:>9.2f}{then_small * 1000:>8.3f}"
            f"{walk_small * 1000:>9.2f}{first_large * 1000:>9.2f}{then_large * 1000:>8.3f}"
            f"{walk_large * 1000:>9.2f}{then_large / then_small:>7.1f}x"
            f"{walk_large / walk_small:>12.1f}x"
        )
    print(
        "(first: the read that indexes the store; then: the median read after it, the index "
        "checked against the store; walk: every item read for the revision)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
