"""The one place that knows which major of the `mcp` SDK is installed: 1.x or 2.x.

mcp 2 renamed `FastMCP` to `MCPServer` (`mcp.server.mcpserver`), moved the streamable HTTP
settings from the constructor to `streamable_http_app()`, gave the constructor a `version`, and
lets a resource handler's own error through where 1.x wraps it twice ("Error creating resource
from template: Error creating resource from template: ..."). Everything else this subpackage
uses has one name in both. Each difference is settled here, in `RecallServer`, once; the rest
of the subpackage imports the SDK's names from this module and never asks which major it runs
on. The code is typed against 1.x, the major the development environment installs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeAlias

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import AnyHttpUrl, ConfigDict, TypeAdapter
from starlette.applications import Starlette

if TYPE_CHECKING:
    from mcp.server.fastmcp import Context, FastMCP
    from mcp.server.fastmcp.exceptions import ToolError
    from mcp.server.lowlevel.helper_types import ReadResourceContents

    RequestContext: TypeAlias = Context[Any, Any, Any]
else:
    try:  # mcp 2.x
        from mcp.server.mcpserver import Context
        from mcp.server.mcpserver import MCPServer as FastMCP
        from mcp.server.mcpserver.exceptions import ToolError
    except ModuleNotFoundError:  # mcp 1.x
        from mcp.server.fastmcp import Context, FastMCP
        from mcp.server.fastmcp.exceptions import ToolError

    # The bare class: the majors' Context take different type parameters, and both find a
    # handler's context parameter by this class.
    RequestContext = Context

SDK_2 = FastMCP.__name__ == "MCPServer"
"""Whether the installed SDK is mcp 2.x."""

__all__ = [
    "AccessToken",
    "AuthSettings",
    "AuthenticatedUser",
    "Context",
    "RecallServer",
    "RequestContext",
    "ToolError",
    "TransportSecuritySettings",
]

INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
"""JSON-RPC's codes, as both majors send a refused resource read."""


class RecallServer(FastMCP):
    """The SDK's server (`FastMCP` on mcp 1.x, `MCPServer` on 2.x) as `recall_server` makes
    it: `streamable_http_app()` is the app of this server's own HTTP settings on either major,
    behind `guard`, and a refused resource read says its reason once.

    `http` holds the streamable HTTP settings (`stateless_http`, `json_response`,
    `streamable_http_path`, `transport_security`); `guard` adds what the server checks before
    the SDK reads a request.
    """

    def __init__(
        self,
        name: str,
        *,
        instructions: str,
        version: str,
        http: dict[str, Any],
        guard: Callable[[Starlette], None],
        auth: AuthSettings | None = None,
        token_verifier: Any = None,
    ) -> None:
        self._http = http
        self._guard = guard
        if SDK_2:
            super().__init__(  # type: ignore[call-arg]
                name,
                instructions=instructions,
                version=version,
                token_verifier=token_verifier,
                auth=auth,
            )
        else:
            super().__init__(
                name, instructions=instructions, token_verifier=token_verifier, auth=auth, **http
            )
            # mcp 1.x has no public seam for serverInfo.version: FastMCP leaves its low-level
            # server's version unset, which then reports the SDK's own version.
            self._mcp_server.version = version

    def streamable_http_app(self) -> Starlette:
        """The streamable HTTP app, with this server's settings, behind its guard."""
        if SDK_2:
            app: Starlette = super().streamable_http_app(**self._http)
        else:
            app = super().streamable_http_app()
        self._guard(app)
        return app

    async def read_resource(self, uri: Any, *more: Any) -> Iterable[ReadResourceContents]:
        """The SDK's read, with a refusal of the handler's (a `ValueError`, a `PermissionError`)
        answered as the protocol error of its own message, said once."""
        try:
            return await super().read_resource(uri, *more)
        except Exception as error:
            cause = _root(error)
            if isinstance(cause, ValueError):
                raise protocol_error(INVALID_PARAMS, str(cause)) from None
            if isinstance(cause, PermissionError):
                raise protocol_error(INVALID_REQUEST, str(cause)) from None
            raise


def _root(error: BaseException) -> BaseException:
    """The exception the handler raised, under the SDK's wrappers (`raise ... from` on 2.x, a
    new exception raised while handling it on 1.x)."""
    while (inner := error.__cause__ or error.__context__) is not None:
        error = inner
    return error


def protocol_error(code: int, message: str) -> Exception:
    """The SDK's JSON-RPC error (`McpError` on 1.x, `MCPError` on 2.x), sent as it is."""
    if SDK_2:
        from mcp.shared.exceptions import MCPError  # type: ignore[attr-defined]

        error: Exception = MCPError(code, message)
        return error
    from mcp.shared.exceptions import McpError
    from mcp.types import ErrorData

    return McpError(ErrorData(code=code, message=message))


def exact_url(url: str) -> AnyHttpUrl:
    """`url` as the SDK's URL type, spelt exactly as given: pydantic adds a `/` to a URL with
    no path, but an issuer is compared as a string (RFC 8414 §3.3), so the protected resource
    metadata must name it as tokens carry it."""
    return _EXACT_URL.validate_python(url)


_EXACT_URL = TypeAdapter(AnyHttpUrl, config=ConfigDict(url_preserve_empty_path=True))


def auth_settings(issuer: str, resource: str) -> AuthSettings:
    """The SDK's resource-server settings. The verifier checks `aud` itself; where the SDK can
    check the token's resource too (1.30 on), it is asked to, as a second check, never the only."""
    settings: dict[str, Any] = {}
    if "validate_token_resource" in AuthSettings.model_fields:
        settings["validate_token_resource"] = True
    return AuthSettings(
        issuer_url=exact_url(issuer), resource_server_url=exact_url(resource), **settings
    )
