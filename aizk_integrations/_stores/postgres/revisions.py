"""The SQL that reads one revision's rows as the reader, under row-level security, at the cost of
the revision: what the MCP boundary's `aizk://` resources run on a Postgres store.

A revision is shown only when every row of it is the reader's, and a revision holding a row of
someone else's answers as one that exists nowhere. Under the reader policy the app's role never
sees such a row, so it cannot tell a mixed revision from one of its own by reading; and a query's
own condition on the metadata cannot drive an index under row-level security (no jsonb operator
is leakproof, so it is evaluated after the policy, over every row the reader may read). So the
database answers both from a function of the table's owner (`REVISION_ROWS_FUNCTION`): given a
revision and the reader's ids, it returns the keys of the revision's rows, in stored order, only
when every one of them is within the reader's ids, and NULL otherwise (none, or any row the
reader may not read): never a foreign row, nor its key. It finds the revision through an index on
the canonical revision ids (`REVISION_INDEX`), which a policy of its own lets it use
(`REVISION_POLICY`). The app's role then reads those rows by key, as the reader, under the reader
policy (`read_revision`): a lookup by primary key, whose `=` is leakproof, so the database
enforces the policy and the index still serves.

The function sees the revision's rows through `REVISION_POLICY`, which admits rows only to the
migration's own role (`TO CURRENT_USER`, the function's owner under `SECURITY DEFINER`), only
while `aizk.revision_check` is on (the function's own `SET`), and only the rows of the revision
the function has set (`aizk.revision_artifact_id`, `aizk.revision_artifact_content_id`, also
restored when it returns). The app's role gets nothing from it; the table's owner, connecting
itself, could turn the setting on, as it could switch row-level security off.
"""

from __future__ import annotations

from typing import Final

from aizk_integrations._stores.postgres.condition import readable
from aizk_integrations._stores.postgres.names import (
    StoreTable,
    identifier,
    key_literal,
    qualified,
)

REVISION_KEYS: Final = ("artifact_id", "artifact_content_id")
"""The metadata keys the revision index is built on: the packer's defaults."""

ROW_KEY: Final = "id"
"""The column PGVector and LlamaIndex's PGVectorStore key their rows by: PGVector's document id
(text), PGVectorStore's `bigserial` (the order rows were added in). langchain-postgres's
`PGVectorStore` keys them by its `id_column` (`langchain_id`, a UUID, by default), and keeps no
order of its own: its revisions read back in the order of their ids, as Qdrant's do."""

REVISION_ID: Final = "{schema}.aizk_scope_id({metadata}::jsonb ->> {key})"
"""A row's revision id under `key`, canonical: `aizk_scope_id` reads a UUID in any spelling the
packer accepts as its canonical text, as the URI writes it."""

REVISION_INDEX: Final = "CREATE INDEX IF NOT EXISTS {name} ON {table} ({artifact}, {content})"
"""Both revision ids of each row, canonical: a revision is a lookup."""

DROP_REVISION_POLICY: Final = "DROP POLICY IF EXISTS aizk_revision_check ON {table}"

REVISION_POLICY: Final = (
    "CREATE POLICY aizk_revision_check ON {table} FOR SELECT TO CURRENT_USER USING ("
    "current_setting('aizk.revision_check', true) = 'on'"
    " AND {artifact} = current_setting('aizk.revision_artifact_id', true)"
    " AND {content} = current_setting('aizk.revision_artifact_content_id', true))"
)
"""The rows of the revision `REVISION_ROWS_FUNCTION` is reading, for its owner alone, while it
runs. A policy's condition may drive an index, so the revision is looked up in `REVISION_INDEX`."""

REVISION_ROWS_FUNCTION: Final = (
    "CREATE OR REPLACE FUNCTION {function}(artifact_id text, artifact_content_id text,"
    " reader_ids text) RETURNS text[] LANGUAGE plpgsql VOLATILE SECURITY DEFINER"
    " SET search_path = pg_catalog, pg_temp AS $$"
    " DECLARE caller_reader_ids text := current_setting('aizk.reader_ids', true);"
    " revision_keys text[];"
    " BEGIN"
    " PERFORM set_config('aizk.reader_ids', '[\"\\n\"]', true),"
    " set_config('aizk.revision_check', 'on', true),"
    " set_config('aizk.revision_artifact_id', artifact_id, true),"
    " set_config('aizk.revision_artifact_content_id', artifact_content_id, true);"
    " SELECT CASE WHEN bool_and({within}) THEN array_agg({key}::text ORDER BY {key}) END"
    " INTO revision_keys"
    " FROM {table} WHERE {artifact} = artifact_id AND {content} = artifact_content_id;"
    " PERFORM set_config('aizk.reader_ids', COALESCE(caller_reader_ids, ''), true),"
    " set_config('aizk.revision_check', '', true),"
    " set_config('aizk.revision_artifact_id', '', true),"
    " set_config('aizk.revision_artifact_content_id', '', true);"
    " RETURN revision_keys;"
    " END $$"
)
"""The keys of a revision's rows, in stored order, when every one of them is within
`reader_ids` (the reader policy's own condition, `condition.readable`); NULL when there is none
or any row is not. It opens `REVISION_POLICY` for itself while it reads and closes it before it
returns, and sets the transaction's reader ids meanwhile to one id no row holds (a line break,
which no scope id may hold), so that the reader policy adds no rows and its index lookup reads
none (with no ids at all it would ask the index for every row); an error undoes its settings
with the (sub)transaction it aborts. (Settings of our own are set in the body: a non-superuser
may not name them in a function's `SET` clause.)"""

REVOKE_FUNCTION: Final = "REVOKE ALL ON FUNCTION {function}(text, text, text) FROM PUBLIC"
GRANT_FUNCTION: Final = "GRANT EXECUTE ON FUNCTION {function}(text, text, text) TO {role}"

REVISION_KEYS_OF: Final = (
    "SELECT set_config('aizk.reader_ids', :reader_ids, true),"
    " {function}(:artifact_id, :artifact_content_id, CAST(:reader_ids AS text))"
)
"""What the app's role runs first in the reading transaction, in one round trip: the reader's ids
set for the policy (as `reading.SET_READER_IDS`), and the revision's row keys, or NULL (its last
column). The function leaves the reader's ids as it found them, whichever runs first."""

READ_ROWS: Final = (
    "SELECT {rows}.{text} AS text, {rows}.{metadata} AS metadata FROM {rows}{join}"
    " WHERE {rows}.{key} = ANY(CAST(:keys AS {key_type}[])){collection} ORDER BY {rows}.{key}"
)
"""The rows of those keys, as the reader, under the reader policy, in stored order."""


def revision_id(table: StoreTable, key: str) -> str:
    """`REVISION_ID` of `table`'s rows under `key`."""
    return REVISION_ID.format(
        schema=identifier(table.schema), metadata=identifier(table.metadata), key=key_literal(key)
    )


def revision_rows_function(table: StoreTable) -> str:
    """The quoted, schema-qualified name of `table`'s `REVISION_ROWS_FUNCTION`."""
    return qualified(table, f"{table.name}_aizk_revision_rows")


def revision_setup(table: StoreTable, key: str, role: str, *, row_key: str = ROW_KEY) -> list[str]:
    """What a migration runs once, as the table's owner, after the scope ids functions: the
    revision index, the function's policy, the function (answering the keys of the column
    `row_key`), and `role`'s right to call it. The revision ids are read from the table's JSON
    metadata column (`keeps_revision_ids`)."""
    name = qualified(table, table.name)
    artifact, content = (revision_id(table, each) for each in REVISION_KEYS)
    function = revision_rows_function(table)
    within = readable(table, key, "reader_ids")
    return [
        REVISION_INDEX.format(
            name=identifier(f"{table.name}_aizk_revision"),
            table=name,
            artifact=artifact,
            content=content,
        ),
        DROP_REVISION_POLICY.format(table=name),
        REVISION_POLICY.format(table=name, artifact=artifact, content=content),
        REVISION_ROWS_FUNCTION.format(
            function=function,
            table=name,
            artifact=artifact,
            content=content,
            within=within,
            key=identifier(row_key),
        ),
        REVOKE_FUNCTION.format(function=function),
        GRANT_FUNCTION.format(function=function, role=identifier(role)),
    ]


def keeps_revision_ids(json_column: str | None, metadata_columns: tuple[str, ...]) -> bool:
    """Whether a langchain-postgres `PGVectorStore` of this layout keeps the revision ids where
    `revision_setup` indexes them: in its JSON metadata column, not in columns of their own."""
    return json_column is not None and not set(REVISION_KEYS) & set(metadata_columns)


def revision_keys_of(table: StoreTable) -> str:
    """`REVISION_KEYS_OF` for `table`."""
    return REVISION_KEYS_OF.format(function=revision_rows_function(table))


def read_rows(table: StoreTable, text: str, key_type: str, *, collection: bool = False) -> str:
    """`READ_ROWS` of `table`, its text in the column `text`; for PGVector (`collection`),
    joined to its collection and held to the one named `:collection`."""
    rows = qualified(table, table.name)
    join, within = "", ""
    if collection:
        collections = qualified(table, table.also_read[0])
        join = f" JOIN {collections} ON {rows}.collection_id = {collections}.uuid"
        within = f" AND {collections}.name = :collection"
    return READ_ROWS.format(
        rows=rows,
        text=identifier(text),
        metadata=identifier(table.metadata),
        join=join,
        key=identifier(ROW_KEY),
        key_type=key_type,
        collection=within,
    )


READ_COLUMNS: Final = (
    "SELECT {columns} FROM {rows} WHERE {rows}.{key} = ANY(:keys) ORDER BY {rows}.{key}"
)
"""`READ_ROWS` for langchain-postgres's `PGVectorStore`: the columns its documents are built
from. The keys are bound as texts for the database to read as the key column's type, as the
store's own `get_by_ids` binds its ids."""


def read_columns(table: StoreTable, row_key: str, columns: list[str]) -> str:
    """`READ_COLUMNS` of `table`, keyed by `row_key`, selecting `columns`."""
    rows = qualified(table, table.name)
    return READ_COLUMNS.format(
        columns=", ".join(f"{rows}.{identifier(column)}" for column in columns),
        rows=rows,
        key=identifier(row_key),
    )
