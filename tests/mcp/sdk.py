"""The SDK's own client, whichever major of `mcp` is installed: how the tests reach a recall
server in memory and over streamable HTTP, and read what it answered.

mcp 2 replaced the 1.x client helpers with one `Client`, moved its HTTP client to httpx2, renamed
`McpError` to `MCPError` and spells result fields in snake case (`is_error`); both majors put the
wire's camel-case names in `model_dump(by_alias=True)`, so the tests read results through `wire`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TextIO

from pydantic import BaseModel

from aizk_integrations.mcp._sdk import SDK_2

if TYPE_CHECKING or not SDK_2:
    from mcp.shared.exceptions import McpError
else:
    from mcp.shared.exceptions import MCPError as McpError

__all__ = ["SDK_2", "McpError", "connected", "session_at", "stdio_session", "wire"]


def wire(result: BaseModel) -> dict[str, Any]:
    """A result as the wire has it: `isError`, `structuredContent`, `content`, `contents`."""
    dumped: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


@asynccontextmanager
async def connected(server: Any, **callbacks: Any) -> AsyncIterator[Any]:
    """The SDK's own client, initialized, talking to `server` in memory (one local user)."""
    if SDK_2:
        from mcp import Client  # type: ignore[attr-defined,unused-ignore]

        async with Client(server, mode="legacy", **callbacks) as client:
            yield client
        return
    from mcp.shared.memory import create_connected_server_and_client_session

    async with create_connected_server_and_client_session(server, **callbacks) as session:
        yield session


@asynccontextmanager
async def session_at(url: str, token: str | None) -> AsyncIterator[Any]:
    """The SDK's client over streamable HTTP, initialized, sending `token` as its bearer."""
    headers = {} if token is None else {"authorization": f"Bearer {token}"}
    opened = _session_2_at if SDK_2 else _session_1_at
    async with opened(url, headers) as session:
        yield session


@asynccontextmanager
async def _session_1_at(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    import httpx
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(url, http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@asynccontextmanager
async def _session_2_at(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    """mcp 2's `Client` over its streamable HTTP transport, whose HTTP client is httpx2's."""
    import httpx2  # type: ignore[import-not-found,unused-ignore]
    from mcp import Client  # type: ignore[attr-defined,unused-ignore]
    from mcp.client.streamable_http import streamable_http_client

    http: Any = httpx2.AsyncClient(headers=headers, timeout=60)
    async with http, Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
        yield client


@asynccontextmanager
async def stdio_session(parameters: Any, errlog: TextIO) -> AsyncIterator[Any]:
    """The SDK's client of a server it starts as a subprocess over stdio, its stderr to
    `errlog`."""
    from mcp.client.stdio import stdio_client

    if SDK_2:
        from mcp import Client  # type: ignore[attr-defined,unused-ignore]

        transport = stdio_client(parameters, errlog=errlog)
        async with Client(transport, mode="legacy") as client:
            yield client
        return
    from mcp import ClientSession

    async with (
        stdio_client(parameters, errlog=errlog) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session
