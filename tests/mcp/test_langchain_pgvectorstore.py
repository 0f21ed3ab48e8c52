"""langchain-postgres's `PGVectorStore` behind `recall_server` when its revision ids live in
metadata columns of their own: the server reads a revision by the ids in the store's JSON
metadata column (where the default layout keeps them, tests/mcp/test_stores.py), so this store
is refused when the server is built, naming `revisions=`; given `revisions=`, the server builds
and recalls each reader's own evidence over it, as the app's role under row-level security."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_postgres import Column, ColumnDict, PGEngine, PGVectorStore
from sqlalchemy import create_engine

from aizk_integrations import RecallResult
from aizk_integrations.langchain import AizkEvidenceCompressor, AizkScopedRetriever, postgres_setup
from aizk_integrations.mcp import StoredText, recall_server
from tests.adapters.postgres_stores import app_database
from tests.mcp.corpus import ANA_MARKER, SAM_MARKER, SAM_REVISION, reader, uri
from tests.mcp.sdk import McpError, connected, wire
from tests.mcp.stores import LANGCHAIN_DIMENSIONS, documents
from tests.postgres import Server

APP = "aizk_mcp_pgvs_app"
TABLE = "mcp_notes"
REVISION_COLUMNS = ["artifact_id", "artifact_content_id"]


@pytest.fixture(scope="module")
def store(postgres_server: Server) -> Iterator[PGVectorStore]:
    """The corpus in a `PGVectorStore` keeping the revision ids in columns of their own (the
    scopes in its JSON metadata), set up with `postgres_setup`, as the app's role sees it."""
    embedding = DeterministicFakeEmbedding(size=LANGCHAIN_DIMENSIONS)
    with app_database(postgres_server, "aizk_mcp_pgvs", APP) as database:
        owner = PGEngine.from_connection_string(database.url("asyncpg"))
        superuser = create_engine(database.url())
        app = PGEngine.from_connection_string(database.url("asyncpg", user=APP))
        try:
            columns: list[Column | ColumnDict] = [Column(name, "text") for name in REVISION_COLUMNS]
            owner.init_vectorstore_table(TABLE, LANGCHAIN_DIMENSIONS, metadata_columns=columns)
            ingesting = PGVectorStore.create_sync(
                owner, embedding, TABLE, metadata_columns=REVISION_COLUMNS
            )
            ingesting.add_documents(documents())
            with superuser.begin() as connection:
                for statement in postgres_setup(ingesting, role=APP):
                    connection.exec_driver_sql(statement)
            yield PGVectorStore.create_sync(
                app, embedding, TABLE, metadata_columns=REVISION_COLUMNS
            )
        finally:
            superuser.dispose()
            asyncio.run(app.close())
            asyncio.run(owner.close())


def test_without_revisions_the_server_is_refused_when_built_naming_revisions_and_the_table(
    store: PGVectorStore,
) -> None:
    retriever = AizkScopedRetriever(vectorstore=store)
    with pytest.raises(TypeError) as refused:
        recall_server(retriever, AizkEvidenceCompressor(), reader=reader("sam"))
    message = str(refused.value)
    assert "in its JSON metadata column" in message
    assert repr(TABLE) in message
    assert "pass revisions=" in message


def test_with_revisions_it_recalls_each_readers_own_evidence_and_reads_through_them(
    store: PGVectorStore,
) -> None:
    asked: list[tuple[str, str]] = []

    def revisions(artifact_id: str, artifact_content_id: str) -> Sequence[StoredText]:
        asked.append((artifact_id, artifact_content_id))
        return [StoredText(text="Sam's plan, from the app.", scopes=["sam"])]

    async def scenario(user: str) -> list[Any]:
        server = recall_server(
            AizkScopedRetriever(vectorstore=store),
            AizkEvidenceCompressor(),
            reader=reader(user),
            revisions=revisions,
        )
        async with connected(server) as session:
            recalled = wire(await session.call_tool("recall", {"query": "the reranker"}))
            try:
                [read] = wire(await session.read_resource(uri(SAM_REVISION)))["contents"]
            except McpError as error:
                return [recalled, error]
        return [recalled, read["text"]]

    for user, own, other in (("sam", SAM_MARKER, ANA_MARKER), ("ana", ANA_MARKER, SAM_MARKER)):
        recalled, read = asyncio.run(scenario(user))
        recall = RecallResult.model_validate(recalled["structuredContent"]["recall"])
        assert own in recall.to_markdown()
        assert other not in repr(recalled)
        if user == "sam":
            assert read == "Sam's plan, from the app."
        else:
            assert isinstance(read, McpError)
            assert read.error.message == f"Resource not found: {uri(SAM_REVISION)}"
    assert asked == [SAM_REVISION, SAM_REVISION]
