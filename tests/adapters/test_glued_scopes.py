"""A record whose scope ids are several written into one string (`{"scopes": "alice,acme"}`) is
no one's to read, and its owner is told: on the scoped path, through every store whose filter
runs in this process, in the words and from the place the plain path says it.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from aizk_integrations import Scope, ScopeDirectory, scope_metadata
from tests.adapters.stores import Item, build
from tests.docs.pages import ROOT
from tests.postgres import Server, fresh_database

IN_PROCESS = ("langchain-in-memory", "langchain-faiss", "llama-index-simple", "llama-index-faiss")
"""The stores whose filter, or the check after an unfiltered page, runs in this process."""
GLUED = (
    "aizk withheld what it could not show: 1 item holds under 'scopes' several scope ids in "
    "one string (such as 'id1,id2'), which no reader's scopes match, so they are withheld from "
    "every reader: store the ids as a list, as scope_metadata(['id1', 'id2']) writes them"
)
ITEMS = [
    Item("the acme merger note", {"scopes": "alice,acme"}),  # written by other code
    Item("alice's own note", scope_metadata("alice")),
]
ALICE = ScopeDirectory.for_caller("alice", {"acme": Scope(name="acme")})


def warned(caplog: pytest.LogCaptureFixture) -> list[str]:
    said = [record.getMessage() for record in caplog.records]
    caplog.clear()
    return said


@pytest.mark.parametrize("kind", IN_PROCESS)
def test_a_record_of_several_ids_in_one_string_is_named_on_the_scoped_path_as_on_the_plain(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    store = build(kind, ITEMS)
    with caplog.at_level(logging.WARNING, logger="aizk_integrations"):
        assert store.shown(ALICE, "note") == ["alice's own note"]  # the plain path
        assert warned(caplog) == [GLUED]
        assert store.scoped(ALICE, "note", 4) == ["alice's own note"]  # on its own
        assert warned(caplog) == [GLUED]
        assert store.ascoped(ALICE, "note", 4) == ["alice's own note"]
        assert warned(caplog) == [GLUED]
        assert store.packed(ALICE, "note", 500) == ["alice's own note"]  # packed as it pages
        assert warned(caplog) == [GLUED]
    assert "merger" not in caplog.text


def test_the_packed_scoped_path_counts_the_record_as_unreadable_as_the_plain_path_does() -> None:
    from aizk_integrations.langchain import AizkEvidenceRetriever, AizkScopedRetriever

    store = build("langchain-in-memory", ITEMS)
    retriever = AizkEvidenceRetriever(
        base_retriever=AizkScopedRetriever(vectorstore=store.store)  # type: ignore[attr-defined]
    )
    [block] = retriever.invoke("note", config={"configurable": {"aizk_reader": ALICE}})
    counts = block.metadata["aizk_counts"]
    assert (counts["kept"], counts["withheld"], counts["unreadable"]) == (1, 1, 1)


@pytest.mark.parametrize("kind", IN_PROCESS)
def test_a_record_of_several_ids_is_shown_to_no_reader_of_any_of_them(kind: str) -> None:
    store = build(kind, ITEMS)
    for reader in (
        ALICE,
        ScopeDirectory.for_caller("acme", {}),
        ScopeDirectory.for_caller("bo", {}),
    ):
        assert "the acme merger note" not in store.scoped(reader, "merger", 4)
        assert "the acme merger note" not in store.packed(reader, "merger", 500)


PAGE = ROOT / "docs" / "metadata-and-scopes.md"
CHROMA = 'collection.get(include=["metadatas"])'
QDRANT = 'client.scroll(collection_name, with_payload=["metadata.scopes"], limit=10_000)'
PGVECTOR = (
    "SELECT id FROM langchain_pg_embedding "
    "WHERE jsonb_path_exists(cmetadata, '$.scopes ? (@ like_regex \"[,;|]\")')"
)
PGVECTORSTORE = (
    "SELECT node_id FROM data_notes "
    "WHERE jsonb_path_exists(metadata_::jsonb, '$.scopes ? (@ like_regex \"[,;|]\")')"
)
STORED: dict[str, dict[str, Any]] = {
    "n1": {"scopes": "ana,org-acme"},
    "n2": {"scopes": ["ana"]},
    "n3": {"scopes": ["ana", "org|acme"]},
    "n4": {"scopes": "ana"},
    "n5": {"scopes": 7},
}
GLUED_IDS = ["n1", "n3"]


def glued(scopes: object) -> bool:
    """The page's test: a text, or a list holding a text, with `,`, `;` or `|` in it."""
    values = scopes if isinstance(scopes, list) else [scopes]
    return any(isinstance(value, str) and any(mark in value for mark in ",;|") for value in values)


def in_the_page(query: str) -> str:
    """`query` as the page's table writes it (a `|` in a table cell is written `\\|`)."""
    assert query.replace("|", "\\|") in PAGE.read_text(encoding="utf-8")
    return query


def stored_items() -> list[Item]:
    return [Item(f"note {name}", metadata) for name, metadata in STORED.items()]


def found_names(ids: list[Any], store: Any) -> list[str]:
    by_id = {item.id: item.text.removeprefix("note ") for item in store.held}
    return sorted(by_id[str(each)] for each in ids)


@pytest.mark.parametrize("kind", ["langchain-chroma", "llama-index-chroma"])
def test_the_pages_chroma_query_finds_exactly_the_records_of_several_ids(kind: str) -> None:
    store = build(kind, stored_items())
    collection = store.store if kind == "langchain-chroma" else store.index.vector_store.client  # type: ignore[attr-defined]
    found = eval(in_the_page(CHROMA), {"collection": collection})
    ids = [
        each
        for each, metadata in zip(found["ids"], found["metadatas"], strict=True)
        if glued(metadata.get("scopes"))
    ]
    assert found_names(ids, store) == GLUED_IDS


@pytest.mark.parametrize("kind", ["langchain-qdrant", "llama-index-qdrant"])
def test_the_pages_qdrant_query_finds_exactly_the_records_of_several_ids(kind: str) -> None:
    store = build(kind, stored_items())
    vector_store = store.store if kind == "langchain-qdrant" else store.index.vector_store  # type: ignore[attr-defined]
    query = in_the_page(QDRANT)
    if kind == "llama-index-qdrant":  # as the page says, LlamaIndex keeps them at "scopes"
        query = query.replace('"metadata.scopes"', '"scopes"')
    names = {"client": vector_store.client, "collection_name": vector_store.collection_name}
    points, _ = eval(query, names)
    payloads = [(point.id, point.payload) for point in points]
    if kind == "langchain-qdrant":
        payloads = [(each, payload["metadata"]) for each, payload in payloads]
    assert found_names([each for each, payload in payloads if glued(payload["scopes"])], store) == (
        GLUED_IDS
    )


def test_the_pages_postgres_queries_find_exactly_the_records_of_several_ids(
    postgres_server: Server,
) -> None:
    with fresh_database(postgres_server, "aizk_glued_scopes") as database:
        engine = create_engine(database.url())
        try:
            with engine.begin() as connection:
                connection.exec_driver_sql(
                    "CREATE TABLE langchain_pg_embedding (id varchar PRIMARY KEY, cmetadata jsonb)"
                )
                connection.exec_driver_sql(
                    "CREATE TABLE data_notes (node_id varchar PRIMARY KEY, metadata_ json)"
                )
                for name, metadata in STORED.items():
                    row = {"id": name, "metadata": json.dumps(metadata)}
                    connection.execute(
                        text("INSERT INTO langchain_pg_embedding VALUES (:id, :metadata)"), row
                    )
                    connection.execute(text("INSERT INTO data_notes VALUES (:id, :metadata)"), row)
                for query in (PGVECTOR, PGVECTORSTORE):
                    found = connection.exec_driver_sql(in_the_page(query)).scalars().all()
                    assert sorted(found) == GLUED_IDS
        finally:
            engine.dispose()
