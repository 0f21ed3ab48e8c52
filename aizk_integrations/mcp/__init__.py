"""The seed's MCP boundary: the `recall` tool and the `aizk://` revision resources, served
from the app's own scoped retrieval and packer with the official `mcp` SDK (1.x or 2.x).

`recall_server(retriever, packer, reader=...)` serves one local reader over stdio;
`recall_server(retriever, packer, auth=JWTReaderVerifier(...))` serves streamable HTTP as an
OAuth 2.1 resource server, each request's reader named by its verified bearer token. A store
that cannot list a revision's items by id is given `revisions=`, a function to `StoredText`s.
"""

_EXTRA = ("mcp", "anyio", "jwt", "cryptography")
"""What the `mcp` extra installs that this subpackage imports: the SDK, the async runtime it
brings, and PyJWT with its crypto backend."""

try:
    from aizk_integrations.mcp._auth import JWTReaderVerifier
    from aizk_integrations.mcp._revisions import StoredText
    from aizk_integrations.mcp._server import recall_server
except ModuleNotFoundError as _error:
    # Only a package of the extra that is not there at all is a missing extra; anything else
    # (an installed SDK lacking a module) is shown as it is.
    if _error.name not in _EXTRA:
        raise
    raise ModuleNotFoundError(
        "aizk_integrations.mcp needs the MCP SDK and PyJWT; install them with "
        f'pip install "aizk-integrations[mcp]" ({_error})',
        name=_error.name,
    ) from _error

__all__ = ["JWTReaderVerifier", "StoredText", "recall_server"]
