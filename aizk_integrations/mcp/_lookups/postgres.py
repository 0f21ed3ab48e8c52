"""A revision in Postgres, read as the reader under row-level security, as the recall reads.

In one transaction on the store's own engine (LangChain's `PGVector` and `PGVectorStore`, the
latter on its `PGEngine`'s loop, as its scoped search runs) or one made from its settings, as
its scoped search makes one (LlamaIndex's `PGVectorStore`): the owner's function tells the
database's answer (the revision's row keys when every row is the reader's, else none:
`_stores.postgres.revisions`), then the rows are read by key with the reader's ids set for the
policy, so a foreign row is refused by the database itself. Imported only once a Postgres store
is in hand (SQLAlchemy).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import anyio.to_thread
import sqlalchemy

from aizk_integrations._scopes.directory import ScopeDirectory
from aizk_integrations._stores.postgres.condition import reader_ids
from aizk_integrations._stores.postgres.names import PGVECTOR_TABLE, StoreTable, llama_index_table
from aizk_integrations._stores.postgres.reading import explaining_a_missing_setup
from aizk_integrations._stores.postgres.revisions import (
    REVISION_KEYS,
    keeps_revision_ids,
    read_columns,
    read_rows,
    revision_keys_of,
)
from aizk_integrations.mcp._revisions import (
    MetadataKeys,
    RevisionIds,
    RevisionNotFoundError,
    StoredText,
    stored_texts,
)


def _revision_keys(keys: MetadataKeys, store: object) -> None:
    """Refuse a packer whose revision keys are not the ones `postgres_setup` indexed."""
    if keys.revision != REVISION_KEYS:
        raise TypeError(
            f"postgres_setup indexes a {type(store).__name__}'s revisions under the metadata "
            f"keys {REVISION_KEYS}, and the packer reads them under {keys.revision}: pass "
            "revisions=, a function from (artifact_id, artifact_content_id) to the revision's "
            "StoredText items in stored order"
        )


@contextmanager
def _set_up() -> Iterator[None]:
    """Around a revision read: a table whose setup predates the revision function is told to
    run `postgres_setup` again, in place of the database's error about a missing function."""
    with explaining_a_missing_setup():
        try:
            yield
        except sqlalchemy.exc.DBAPIError as error:
            if "aizk_revision_rows" not in str(error.orig):
                raise
            raise RuntimeError(
                "this table's setup predates revision reads (the database has no "
                "aizk_revision_rows function): run the SQL postgres_setup(store, role=...) "
                "returns again, as the table's owner (docs/postgres.md)"
            ) from error


class _Reading:
    """The two statements of a revision read, for one table: the reader's ids set and the
    revision's row keys asked for (`REVISION_KEYS_OF`), then the rows read by key."""

    def __init__(self, table: StoreTable, text: str, key_type: str, *, collection: bool) -> None:
        self.table = table
        self.keys_of = sqlalchemy.text(revision_keys_of(table))
        self.rows = sqlalchemy.text(read_rows(table, text, key_type, collection=collection))

    def parameters(self, ids: RevisionIds, reader: ScopeDirectory) -> dict[str, str]:
        return {
            "artifact_id": ids[0],
            "artifact_content_id": ids[1],
            "reader_ids": reader_ids(reader.scopes.keys()),
        }


def _items(
    rows: Sequence[Any], found: Sequence[str], keys: MetadataKeys, ids: RevisionIds
) -> list[StoredText]:
    """The rows read, or not found when the database showed fewer than the revision holds."""
    if len(rows) != len(found):
        raise RevisionNotFoundError(ids)
    return stored_texts(((row.text, row.metadata) for row in rows), keys, ids)


class PGVectorRevisions:
    """langchain-postgres's `PGVector`, on its own engine (sync, or async for an async store),
    its revision held to the store's collection."""

    def __init__(self, store: Any, keys: MetadataKeys) -> None:
        _revision_keys(keys, store)
        self._store, self._keys = store, keys
        self._reading = _Reading(PGVECTOR_TABLE, "document", "varchar", collection=True)

    async def read(self, ids: RevisionIds, reader: ScopeDirectory) -> list[StoredText]:
        if not self._store.async_mode:
            return await anyio.to_thread.run_sync(self._read, ids, reader)
        async with self._store.session_maker() as session:
            engine = session.bind
        parameters = self._reading.parameters(ids, reader)
        with _set_up():
            async with engine.begin() as connection:
                found = (await connection.execute(self._reading.keys_of, parameters)).one()[-1]
                if found is None:
                    raise RevisionNotFoundError(ids)
                rows = (await connection.execute(self._reading.rows, self._rows(found))).all()
        return _items(rows, found, self._keys, ids)

    def _read(self, ids: RevisionIds, reader: ScopeDirectory) -> list[StoredText]:
        parameters = self._reading.parameters(ids, reader)
        engine = self._store.session_maker.get_bind()
        with _set_up(), engine.begin() as connection:
            found = connection.execute(self._reading.keys_of, parameters).one()[-1]
            if found is None:
                raise RevisionNotFoundError(ids)
            rows = connection.execute(self._reading.rows, self._rows(found)).all()
        return _items(rows, found, self._keys, ids)

    def _rows(self, found: list[str]) -> dict[str, Any]:
        return {"keys": found, "collection": self._store.collection_name}


class PGVectorStoreRevisions:
    """LlamaIndex's `PGVectorStore`, on an engine made once, at the server's build, from the
    store's public settings, as its scoped search makes its own (the store keeps its engines
    private); run on a worker thread."""

    def __init__(self, store: Any, keys: MetadataKeys) -> None:
        _revision_keys(keys, store)
        if store.connection_string in ("", "None"):  # PGVectorStore keeps str(None)
            raise TypeError(
                "recall_server reads a PGVectorStore's revisions on an engine of its own, made "
                "from the store's connection_string, and this store was built from engine "
                "objects: build it with a connection_string, or pass revisions="
            )
        self._keys = keys
        self._reading = _Reading(
            llama_index_table(store.table_name, store.schema_name),
            "text",
            "bigint",
            collection=False,
        )
        self._engine = sqlalchemy.create_engine(
            store.connection_string, echo=store.debug, **store.create_engine_kwargs
        )

    async def read(self, ids: RevisionIds, reader: ScopeDirectory) -> list[StoredText]:
        return await anyio.to_thread.run_sync(self._read, ids, reader)

    def _read(self, ids: RevisionIds, reader: ScopeDirectory) -> list[StoredText]:
        parameters = self._reading.parameters(ids, reader)
        with _set_up(), self._engine.begin() as connection:
            found = connection.execute(self._reading.keys_of, parameters).one()[-1]
            if found is None:
                raise RevisionNotFoundError(ids)
            rows = connection.execute(self._reading.rows, {"keys": found}).all()
        return _items(rows, found, self._keys, ids)


class ColumnsStoreRevisions:
    """langchain-postgres's `PGVectorStore` (or `AsyncPGVectorStore`), on its own engine and
    loop, as its scoped search runs (`_pgvectorstore`), its rows read by its id column and built
    into documents as the store builds them, in the order of their ids. Its table must have been
    set up with the revision statements, which `postgres_setup` adds where the layout keeps the
    revision ids in its JSON metadata column."""

    def __init__(self, store: Any, keys: MetadataKeys, scopes_key: str) -> None:
        from aizk_integrations.langchain._pgvectorstore import StoreLayout

        _revision_keys(keys, store)
        self._store, self._keys = store, keys
        self._layout = StoreLayout.of(store, scopes_key)
        if not keeps_revision_ids(self._layout.json_column, self._layout.metadata_columns):
            raise TypeError(
                f"recall_server reads a PGVectorStore's revisions by the ids {REVISION_KEYS} in "
                "its JSON metadata column, and the store of table "
                f"{self._layout.table.name!r} keeps them elsewhere (in metadata columns of "
                "their own, or it has no JSON metadata column): pass revisions=, a function "
                "from (artifact_id, artifact_content_id) to the revision's StoredText items"
            )
        self._keys_of = sqlalchemy.text(revision_keys_of(self._layout.table))
        self._rows = sqlalchemy.text(
            read_columns(self._layout.table, self._layout.id_column, self._layout.selected)
        )

    async def read(self, ids: RevisionIds, reader: ScopeDirectory) -> list[StoredText]:
        from aizk_integrations.langchain._pgvectorstore import _on_the_stores_loop

        documents = await _on_the_stores_loop(self._store).awaited(self._read(ids, reader))
        return stored_texts(documents, self._keys, ids)

    async def _read(
        self, ids: RevisionIds, reader: ScopeDirectory
    ) -> list[tuple[str, dict[str, Any]]]:
        from aizk_integrations.langchain._pgvectorstore import _wrapped

        parameters = {
            "artifact_id": ids[0],
            "artifact_content_id": ids[1],
            "reader_ids": reader_ids(reader.scopes.keys()),
        }
        with _set_up():
            async with _wrapped(self._store).engine.begin() as connection:
                found = (await connection.execute(self._keys_of, parameters)).one()[-1]
                if found is None:
                    raise RevisionNotFoundError(ids)
                rows = (await connection.execute(self._rows, {"keys": found})).mappings().all()
        if len(rows) != len(found):
            raise RevisionNotFoundError(ids)
        documents = (self._layout.document(row) for row in rows)
        return [(document.page_content, document.metadata) for document in documents]
