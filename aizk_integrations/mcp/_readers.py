"""Whose request this is: the one reader each MCP request serves, found anew for every request.

Over stdio one local user runs the server, so the reader is fixed when it starts. Over
streamable HTTP it comes from the request's own verified bearer token, which the SDK's
authentication middleware put on that request: nothing outlives the request, and a server
given a fixed reader refuses to answer over HTTP rather than serve that reader to anyone.
"""

from __future__ import annotations

from collections.abc import Callable

from aizk_integrations import ScopeDirectory
from aizk_integrations.mcp._auth import JWTReaderVerifier
from aizk_integrations.mcp._sdk import AuthenticatedUser, RequestContext

ReaderOf = Callable[[RequestContext], ScopeDirectory]

NOT_OVER_HTTP = (
    "this server was built for one local reader (reader=) and answers over stdio only; "
    "serve HTTP with auth=JWTReaderVerifier(...)"
)
ONLY_OVER_HTTP = (
    "this server names each request's reader from its bearer token (auth=) and answers over "
    "streamable HTTP only; this request carries no verified token. For one local reader over "
    "stdio, build it with reader= instead"
)


def fixed_reader(reader: ScopeDirectory) -> ReaderOf:
    """The reader a stdio server was started for."""

    def reader_of(context: RequestContext) -> ScopeDirectory:
        if context.request_context.request is not None:
            raise PermissionError(NOT_OVER_HTTP)
        return reader

    return reader_of


def token_reader(verifier: JWTReaderVerifier) -> ReaderOf:
    """The reader of the request's verified bearer token."""

    def reader_of(context: RequestContext) -> ScopeDirectory:
        request = context.request_context.request
        user = None if request is None else request.scope.get("user")
        if not isinstance(user, AuthenticatedUser) or user.access_token.claims is None:
            raise PermissionError(ONLY_OVER_HTTP)
        return verifier.reader_of(user.access_token.claims)

    return reader_of
