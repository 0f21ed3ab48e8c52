"""Clients of a recall server over streamable HTTP: the SDK's own, and a bare POST."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from aizk_integrations.mcp import JWTReaderVerifier
from tests.mcp.tokens import KEY, claims, signed

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


@asynccontextmanager
async def session_at(url: str, token: str | None) -> AsyncIterator[ClientSession]:
    """The SDK's client, initialized, sending `token` as its bearer token."""
    headers = {} if token is None else {"authorization": f"Bearer {token}"}
    async with (
        httpx.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(url, http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@dataclass(frozen=True)
class Served:
    """A recall server over HTTP: where it is, its audience, and its verifier."""

    url: str
    audience: str
    verifier: JWTReaderVerifier

    def token(self, sub: str, **more: Any) -> str:
        return signed(KEY, claims(self.audience, sub, **more))
