"""The recall server as each uvicorn worker process builds it (`--factory`), configured by the
environment the test starts uvicorn with."""

from __future__ import annotations

import os

from starlette.applications import Starlette

from aizk_integrations.langchain import AizkEvidenceCompressor
from aizk_integrations.langchain import AizkScopedRetriever as LangChainScopedRetriever
from aizk_integrations.mcp import JWTReaderVerifier, recall_server
from tests.mcp.corpus import ORGANIZATIONS, langchain_store
from tests.mcp.tokens import ISSUER


def app() -> Starlette:
    verifier = JWTReaderVerifier(
        issuer=ISSUER,
        audience=os.environ["AIZK_MCP_AUDIENCE"],
        jwks_url=os.environ["AIZK_MCP_JWKS_URL"],
        organizations=ORGANIZATIONS,
    )
    retriever = LangChainScopedRetriever(vectorstore=langchain_store())
    return recall_server(retriever, AizkEvidenceCompressor(), auth=verifier).streamable_http_app()
