"""What the HTTP server checks before the SDK reads a request: no request shape answers 5xx.

Three requests the SDK would get wrong are answered here instead, each with a 4xx or a 503 that
says why:

- an access token in the URL (`?access_token=`, RFC 6750 §2.3) is refused, and taken out of the
  request before anything logs it: uvicorn's access log writes the query string of this very
  request once it is answered, so the token is removed from it, not from a copy;
- while the authorization server's keys cannot be fetched, a request with a bearer token is
  answered 503 with `Retry-After`, so an outage is told apart from a bad token (401);
- a JSON body nested deeper than `MAX_DEPTH` is a JSON-RPC parse error (400): the SDK's JSON
  parser recurses, and a body nested twenty thousand deep would end in a `RecursionError`; one
  larger than `MAX_BODY` is refused (413) before more of it is read, on every SDK release (mcp
  1.30 brought a limit of its own, of the same size; earlier ones read any body whole).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from urllib.parse import parse_qsl, urlencode

import anyio.to_thread
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from aizk_integrations.mcp._keys import RETRY, KeysUnavailable

MAX_DEPTH = 64
"""The deepest a request body's JSON may nest: an MCP message needs a handful of levels."""

MAX_BODY = 4 * 1024 * 1024
"""The most bytes a request body may hold: the SDK's own limit since mcp 1.30."""


class Guard:
    """ASGI middleware in front of the SDK's app; `keys_ready` raises `KeysUnavailable` while
    the keys cannot be fetched (None: a server without tokens)."""

    def __init__(self, app: ASGIApp, keys_ready: Callable[[], None] | None = None) -> None:
        self.app = app
        self.keys_ready = keys_ready

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if _without_query_token(scope):
            await _answer(send, 401, _URL_TOKEN, {"www-authenticate": _URL_TOKEN_CHALLENGE})
            return
        if self.keys_ready is not None and _bearer(scope):
            try:
                await anyio.to_thread.run_sync(self.keys_ready)
            except KeysUnavailable:
                await _answer(send, 503, _OUTAGE, {"retry-after": str(round(RETRY))})
                return
        if scope["method"] == "POST":
            body = await _body(receive)
            if body is None:
                await _answer(send, 413, _TOO_LARGE)
                return
            if nesting(body) > MAX_DEPTH:
                await _answer(send, 400, _TOO_DEEP)
                return
            receive = _replaying(body, receive)
        await self.app(scope, receive, send)


_TOO_LARGE = {
    "jsonrpc": "2.0",
    "id": None,
    "error": {"code": -32600, "message": f"Invalid request: the body is over {MAX_BODY} bytes"},
}
_URL_TOKEN = {
    "error": "invalid_request",
    "error_description": "send the access token in the Authorization header, never in the URL",
}
_URL_TOKEN_CHALLENGE = (
    'Bearer error="invalid_request", error_description="send the access token in the '
    'Authorization header, never in the URL"'
)
_OUTAGE = {
    "error": "temporarily_unavailable",
    "error_description": (
        "the authorization server's keys cannot be fetched, so no token can be checked; "
        "try again shortly"
    ),
}
_TOO_DEEP = {
    "jsonrpc": "2.0",
    "id": None,
    "error": {"code": -32700, "message": f"Parse error: the JSON nests deeper than {MAX_DEPTH}"},
}


def _without_query_token(scope: Scope) -> bool:
    """Whether the URL carried an access token; if so it is removed from the request itself,
    which is what the server's access log reads."""
    query = scope.get("query_string", b"").decode("latin-1")
    if "access_token" not in query:
        return False
    pairs = parse_qsl(query, keep_blank_values=True)
    if all(name != "access_token" for name, _ in pairs):
        return False
    kept = [(name, value) for name, value in pairs if name != "access_token"]
    scope["query_string"] = urlencode(kept).encode("latin-1")
    return True


def _bearer(scope: Scope) -> bool:
    return any(
        name == b"authorization" and value[:7].lower() == b"bearer "
        for name, value in scope.get("headers", [])
    )


async def _body(receive: Receive) -> bytes | None:
    """The request's body, or `None` once it is over `MAX_BODY` (the rest is left unread)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if size > MAX_BODY:
            return None
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replaying(body: bytes, receive: Receive) -> Receive:
    """`receive` for the app: the body read here, then whatever the client sends next."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


def nesting(body: bytes) -> int:
    """How deep the JSON text's arrays and objects nest, read in one pass (strings skipped);
    a body with few brackets in all is not read byte by byte."""
    if body.count(b"[") + body.count(b"{") <= MAX_DEPTH:
        return body.count(b"[") + body.count(b"{")
    deepest = depth = 0
    in_string = escaped = False
    for byte in body:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            deepest = max(deepest, depth)
        elif byte in (0x5D, 0x7D):  # ] }
            depth -= 1
    return deepest


async def _answer(
    send: Send, status: int, document: object, headers: dict[str, str] | None = None
) -> None:
    body = json.dumps(document).encode()
    fields = {
        "content-type": "application/json",
        "content-length": str(len(body)),
        **(headers or {}),
    }
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(name.encode(), value.encode("latin-1")) for name, value in fields.items()],
        }
    )
    await send({"type": "http.response.body", "body": body})
