"""The bundled corpus as an MCP server: the `recall` tool and the `aizk://` revision resources.

Over stdio (the default) it serves one local reader, as a desktop assistant starts it:

    python examples/mcp_server.py --reader sam

Over streamable HTTP it is an OAuth 2.1 resource server at http://127.0.0.1:PORT/mcp, each
request's reader named by its bearer token (`sub`, and the `organizations` claim), checked
against the authorization server's keys; the audience is that URL:

    python examples/mcp_server.py --http --port 8765 --issuer https://auth.example.org/oidc \\
        --audience http://127.0.0.1:8765/mcp --jwks-url https://auth.example.org/oidc/jwks

Everything is offline but the keys: the corpus ships beside this file and the embeddings are
LangChain's fake ones. The server is made from the same scoped retriever and packer a chain
over this corpus uses (see langchain_rag.py): no second copy of the data, no second rule.
"""

from __future__ import annotations

import argparse
import json

import uvicorn
from corpus import CORPUS_PATH, load_notes, reader_directory
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore

from aizk_integrations import Scope
from aizk_integrations.langchain import AizkEvidenceCompressor, AizkScopedRetriever
from aizk_integrations.mcp import JWTReaderVerifier, recall_server


def retrieval() -> tuple[AizkScopedRetriever, AizkEvidenceCompressor]:
    """The app's own scoped retriever over every reader's notes, and its packer."""
    store = InMemoryVectorStore(embedding=DeterministicFakeEmbedding(size=64))
    store.add_documents(
        [
            Document(id=note["id"], page_content=note["text"], metadata=note["metadata"])
            for note in load_notes()
        ]
    )
    return AizkScopedRetriever(vectorstore=store, search_kwargs={"k": 12}), AizkEvidenceCompressor()


def organizations() -> dict[str, Scope]:
    """The app's directory of organizations: every one the corpus has, by scope id."""
    listed = json.loads(CORPUS_PATH.read_text(encoding="utf-8"))["organizations"]
    return {
        scope_id: Scope(name=org["name"], description=org["description"])
        for scope_id, org in listed.items()
    }


def serve(arguments: argparse.Namespace) -> None:
    """The server over the corpus, run over stdio for one reader or over HTTP for many."""
    retriever, packer = retrieval()
    if not arguments.http:
        reader = reader_directory(arguments.reader)
        recall_server(retriever, packer, reader=reader).run("stdio")
        return
    verifier = JWTReaderVerifier(
        issuer=arguments.issuer,
        audience=arguments.audience,
        jwks_url=arguments.jwks_url,
        organizations=organizations(),
    )
    app = recall_server(retriever, packer, auth=verifier).streamable_http_app()
    uvicorn.run(app, host="127.0.0.1", port=arguments.port)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reader", default="sam", help="stdio: the local reader (sam or ana)")
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP instead")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--issuer", help="HTTP: the authorization server's issuer")
    parser.add_argument("--audience", help="HTTP: this server's URL, http://127.0.0.1:PORT/mcp")
    parser.add_argument("--jwks-url", help="HTTP: where the authorization server's keys are")
    arguments = parser.parse_args()
    if arguments.http and not (arguments.issuer and arguments.audience and arguments.jwks_url):
        parser.error("--http needs --issuer, --audience and --jwks-url")
    serve(arguments)


if __name__ == "__main__":
    main()
