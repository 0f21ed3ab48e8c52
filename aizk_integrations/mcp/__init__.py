"""The seed's MCP boundary: the `recall` tool and the `aizk://` revision resources, served
from the app's own scoped retrieval and packer with the official `mcp` SDK.

`recall_server(retriever, packer, reader=...)` serves one local reader over stdio;
`recall_server(retriever, packer, auth=JWTReaderVerifier(...))` serves streamable HTTP as an
OAuth 2.1 resource server, each request's reader named by its verified bearer token. A store
that cannot list a revision's items by id is given `revisions=`, a function to `StoredText`s.
"""

try:
    from aizk_integrations.mcp._auth import JWTReaderVerifier
    from aizk_integrations.mcp._revisions import StoredText
    from aizk_integrations.mcp._server import recall_server
except ModuleNotFoundError as _error:
    # Only a missing SDK is a missing extra; anything else is shown as it is.
    if _error.name != "mcp" and not (_error.name or "").startswith("mcp."):
        raise
    raise ModuleNotFoundError(
        "aizk_integrations.mcp needs the MCP SDK (mcp); install it with "
        f'pip install "aizk-integrations[mcp]" ({_error})',
        name=_error.name,
    ) from _error

__all__ = ["JWTReaderVerifier", "StoredText", "recall_server"]
