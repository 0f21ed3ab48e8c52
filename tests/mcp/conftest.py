"""A recall server over streamable HTTP on 127.0.0.1, behind its own authorization server; and
the one warning of an SDK release this package accepts that the MCP tests let through."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.mcp.http import Served, served_over_http
from tests.mcp.tokens import KEY, jwks_served

SDK_WARNING = "ignore:Field 'lifespan' has an incomplete definition"
"""mcp 1.27.2 to 1.29 (the floor .ci/lowest tests) build FastMCP's settings with a forward
reference that pydantic-settings 2.12 and later warn about (IncompleteFieldDefinitionWarning) on
every server built; 1.30 resolved it. The SDK's, harmless to us: every other warning stays an
error."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.startswith("tests/mcp/"):
            item.add_marker(pytest.mark.filterwarnings(SDK_WARNING))


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    """The LangChain retrieval over the corpus, served by uvicorn with JWT readers."""
    with jwks_served(KEY) as jwks_url, served_over_http(jwks_url) as served:
        yield served
