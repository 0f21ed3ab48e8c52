"""A recall server over streamable HTTP on 127.0.0.1, behind its own authorization server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from aizk_integrations.langchain import AizkEvidenceCompressor
from aizk_integrations.langchain import AizkScopedRetriever as LangChainScopedRetriever
from aizk_integrations.mcp import JWTReaderVerifier, recall_server
from tests.mcp.corpus import ORGANIZATIONS, langchain_store
from tests.mcp.http import Served
from tests.mcp.tokens import ISSUER, KEY, jwks_served
from tests.serving import listening, port_of, serving


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    """The LangChain retrieval over the corpus, served by uvicorn with JWT readers."""
    with listening() as sock, jwks_served(KEY) as jwks_url:
        audience = f"http://127.0.0.1:{port_of(sock)}/mcp"
        verifier = JWTReaderVerifier(
            issuer=ISSUER, audience=audience, jwks_url=jwks_url, organizations=ORGANIZATIONS
        )
        retriever = LangChainScopedRetriever(vectorstore=langchain_store())
        server = recall_server(retriever, AizkEvidenceCompressor(), auth=verifier)
        with serving(server.streamable_http_app(), sock):
            yield Served(audience, audience, verifier)
