"""Clients of a recall server over streamable HTTP: the SDK's own (tests/mcp/sdk.py), and a bare
POST."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from aizk_integrations.langchain import AizkEvidenceCompressor
from aizk_integrations.langchain import AizkScopedRetriever as LangChainScopedRetriever
from aizk_integrations.mcp import JWTReaderVerifier, recall_server
from tests.mcp.corpus import ORGANIZATIONS, langchain_store
from tests.mcp.sdk import session_at
from tests.mcp.tokens import ISSUER, KEY, claims, signed
from tests.serving import listening, port_of, serving

__all__ = ["ACCEPT", "INITIALIZE", "Served", "posted", "served_over_http", "session_at"]

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"},
    },
}
ACCEPT = {"accept": "application/json, text/event-stream"}


@dataclass(frozen=True)
class Served:
    """A recall server over HTTP: where it is, its audience, and its verifier."""

    url: str
    audience: str
    verifier: JWTReaderVerifier

    def token(self, sub: str, **more: Any) -> str:
        return signed(KEY, claims(self.audience, sub, **more))


@contextmanager
def served_over_http(
    jwks_url: str, issuer: str = ISSUER, *, log_level: str = "error"
) -> Iterator[Served]:
    """The LangChain retrieval over the corpus, served by uvicorn on 127.0.0.1 with JWT readers
    whose keys are at `jwks_url`."""
    with listening() as sock:
        audience = f"http://127.0.0.1:{port_of(sock)}/mcp"
        verifier = JWTReaderVerifier(
            issuer=issuer, audience=audience, jwks_url=jwks_url, organizations=ORGANIZATIONS
        )
        retriever = LangChainScopedRetriever(vectorstore=langchain_store())
        server = recall_server(retriever, AizkEvidenceCompressor(), auth=verifier)
        with serving(server.streamable_http_app(), sock, log_level=log_level):
            yield Served(audience, audience, verifier)


def posted(url: str, token: str | None, body: object = INITIALIZE) -> httpx.Response:
    """A bare JSON-RPC POST, as any HTTP client sends one, with `token` as its bearer."""
    bearer = {} if token is None else {"authorization": f"Bearer {token}"}
    headers = {**ACCEPT, "content-type": "application/json", **bearer}
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(url, content=content, headers=headers, timeout=60)
