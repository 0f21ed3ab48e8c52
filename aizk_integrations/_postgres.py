"""The SQL that keeps each reader of a Postgres + pgvector store to their own rows.

One condition says which rows a reader may read: every scope of the row is one of the reader's
ids, and it has at least one. The stores' queries carry it beside their vector ordering, with the
reader's ids bound as one jsonb parameter; the row-level security policy carries it with the ids
of the transaction's setting, so that a query that forgot the filter still returns nothing
foreign. The indexes and the per-transaction setting that make it fast are here too.

Everything the database runs is a named constant below. Identifiers (tables, columns, roles,
indexes) and the scopes key enter only through psycopg's own quoting (`sql.Identifier`,
`sql.Literal`), never string formatting; reader ids enter only as bound parameters or through
`set_config`. Framework-free: no LangChain or LlamaIndex here, and psycopg is imported by the
functions that compose SQL, not by importing this module.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from aizk_integrations._errors import quoted
from aizk_integrations._uuids import CANONICAL_UUID

if TYPE_CHECKING:
    from psycopg import sql

READER_IDS_SETTING: Final = "aizk.reader_ids"
"""The transaction-local setting that carries the request's reader ids to the policy."""

SET_READER_IDS: Final = "SELECT set_config('aizk.reader_ids', :reader_ids, true)"
"""Run first in each transaction of a request, with `reader_ids(...)`'s JSON text.

The third argument makes the setting local to the transaction: at commit or rollback it is gone,
so a pooled connection handed to the next request carries no reader (and sees nothing until that
request sets its own). A plain `SET` would stay with the connection.
"""

ITERATIVE_SCAN: Final = "SET LOCAL hnsw.iterative_scan = relaxed_order"
"""Run in each query's transaction (pgvector 0.8 or later).

An HNSW index scan finds `hnsw.ef_search` (40) candidates and the filter runs after it, so a
reader owning 1% of the rows would get none or one of them. An iterative scan keeps scanning
until the LIMIT is met (or `hnsw.max_scan_tuples` is reached). Relaxed order may return rows
slightly out of distance order; the stores return their distances, so the order can be restored.
"""

PREFER_VECTOR_INDEX: Final = "SET LOCAL enable_bitmapscan = off"
"""Run in the query's transaction, under row-level security, for a reader who owns a large share
of the rows.

The policy's reader ids are read at execution, so the planner cannot tell a rare reader from a
common one and plans for a rare one: every readable row through the scopes index, then a sort.
That is exact, but for a reader owning half of 100,003 rows it took 67 ms where the HNSW scan
took 2 ms. Without bitmap scans the planner weighs the HNSW index, whose iterative scan fills the
LIMIT, against a sequential scan (which it picks for a table of 10,003 rows). Never for a rare
reader: their rows would then be searched for instead of looked up.
"""

SCOPES_OF_ROW: Final = "({metadata}::jsonb -> {key})"
"""The row's scopes as jsonb. The cast is a no-op on a jsonb column (PGVector's `cmetadata`,
LlamaIndex's `metadata_` with `use_jsonb=True`) and converts LlamaIndex's default json column;
the index and the queries use this same expression, so the planner can match them."""

READABLE_ROW: Final = (
    "({scopes} <@ {reader_ids} AND {scopes} <> '[]'::jsonb"
    " AND {scopes} @> ANY (ARRAY(SELECT jsonb_array_elements({reader_ids}))))"
)
"""A row the reader may read: its scopes within the reader's ids, at least one of them.

- `<@`, contained in: every scope of the row is one of the reader's ids. jsonb containment
  compares values, so `7` matches only the number 7 and `"7"` only the string: the ids hold
  every spelling a row may have stored (`reader_ids`). A bare string or number is one id
  (jsonb lets an array contain a scalar), while an object, a nested list, `null` and a row
  without the key are never contained, so are unreadable.
- `<> '[]'`: the empty list is contained in everything; a row in no scope has no owner.
- `@> ANY (...)`, some scope of the row is one of the reader's: implied by the two above, and
  said again because it is what a GIN `jsonb_path_ops` index answers (`<@` is not), so a rare
  reader's rows are found through the index instead of a scan. Under row-level security only
  the policy's own conditions may drive an index (a query's non-leakproof operators are
  evaluated after it), so the policy carries this part too.
"""

BOUND_READER_IDS: Final = "CAST(:reader_ids AS jsonb)"
"""A query's reader ids: one bound parameter, the JSON text of `reader_ids(...)`."""

TRANSACTION_READER_IDS: Final = "NULLIF(current_setting('aizk.reader_ids', true), '')::jsonb"
"""The policy's reader ids: the transaction's setting. Never set, `current_setting(..., true)` is
NULL; set by an earlier transaction on the same connection, it reads `''`. Both become NULL,
and a NULL condition admits no row."""

ENABLE_ROW_SECURITY: Final = "ALTER TABLE {table} ENABLE ROW LEVEL SECURITY"
FORCE_ROW_SECURITY: Final = "ALTER TABLE {table} FORCE ROW LEVEL SECURITY"
"""FORCE subjects the table's owner to the policy too (superusers and BYPASSRLS roles never are)."""

READER_POLICY: Final = (
    "CREATE POLICY aizk_reader_scopes ON {table} USING {readable} WITH CHECK {readable}"
)
"""For every command: a role sees, updates and deletes only rows within the transaction's reader
ids, and writes only rows within them. Reading roles are granted SELECT alone. (`READABLE_ROW`
brings its own parentheses.)"""

GRANT_SCHEMA: Final = "GRANT USAGE ON SCHEMA {schema} TO {role}"
GRANT_READ: Final = "GRANT SELECT ON {table} TO {role}"
"""All a reading role needs: SELECT on the store's table (and on PGVector's collection table,
which each of its searches reads), no write, no TRUNCATE (which row security does not cover)."""

ROW_SECURITY_ACTIVE: Final = "SELECT row_security_active(CAST(:table AS regclass))"
"""Whether the policy binds the current role on `:table` (a quoted, schema-qualified name):
false for a superuser, a BYPASSRLS role, or the owner of a table without FORCE."""

SCOPES_INDEX: Final = (
    "CREATE INDEX IF NOT EXISTS {name} ON {table} USING gin ({scopes} jsonb_path_ops)"
)
"""GIN over the row's scopes: what answers `READABLE_ROW`'s `@> ANY (...)` part."""

EMBEDDING_INDEX: Final = (
    "CREATE INDEX IF NOT EXISTS {name} ON {table} USING hnsw ({embedding} vector_cosine_ops)"
)
"""HNSW for cosine distance (`<=>`), which both stores order by by default. The column needs a
dimension: PGVector's has one only when the store is made with `embedding_length`."""


@dataclass(frozen=True)
class StoreTable:
    """Where a store keeps its rows: the table, its metadata (json or jsonb) and vector columns,
    and the tables of the same schema its searches read besides."""

    schema: str
    name: str
    metadata: str
    embedding: str = "embedding"
    also_read: tuple[str, ...] = ()


PGVECTOR_TABLE: Final = StoreTable(
    "public", "langchain_pg_embedding", metadata="cmetadata", also_read=("langchain_pg_collection",)
)
"""langchain-postgres's `PGVector`: every collection's rows in one table, metadata as jsonb; each
search first looks its collection up by name in `langchain_pg_collection`."""


def llama_index_table(table_name: str, schema_name: str = "public") -> StoreTable:
    """LlamaIndex's `PGVectorStore(table_name=..., schema_name=...)`: its own `data_` table,
    named in lower case as the store names it."""
    return StoreTable(schema_name.lower(), f"data_{table_name.lower()}", metadata="metadata_")


def readable_row(table: StoreTable, key: str) -> sql.Composed:
    """`READABLE_ROW` for a query's WHERE: `table`'s scopes under `key`, within the ids bound as
    `:reader_ids` (`BOUND_READER_IDS`); `.as_string()` gives the text for SQLAlchemy's `text()`."""
    return _readable(table, key, BOUND_READER_IDS)


def _readable(table: StoreTable, key: str, reader_ids: str) -> sql.Composed:
    from psycopg import sql

    return sql.SQL(READABLE_ROW).format(scopes=_scopes(table, key), reader_ids=sql.SQL(reader_ids))


def _scopes(table: StoreTable, key: str) -> sql.Composed:
    from psycopg import sql

    if not key.isidentifier():  # composed SQL also goes through text(), which binds any `:name`
        raise ValueError(
            "the scopes key of a Postgres store must be a plain name (letters, digits and _, "
            f"not starting with a digit), not {quoted(key)}"
        )
    return sql.SQL(SCOPES_OF_ROW).format(
        metadata=sql.Identifier(table.metadata), key=sql.Literal(key)
    )


def row_security(table: StoreTable, key: str) -> list[sql.Composed]:
    """The statements that put `table` under the reader policy, in order (run once, as its
    owner or a superuser)."""
    from psycopg import sql

    name = sql.Identifier(table.schema, table.name)
    readable = _readable(table, key, TRANSACTION_READER_IDS)
    return [
        sql.SQL(ENABLE_ROW_SECURITY).format(table=name),
        sql.SQL(FORCE_ROW_SECURITY).format(table=name),
        sql.SQL(READER_POLICY).format(table=name, readable=readable),
    ]


def reading_grants(role: str, table: StoreTable) -> list[sql.Composed]:
    """What `role` needs to search `table`, and no more."""
    from psycopg import sql

    role_name, schema = sql.Identifier(role), sql.Identifier(table.schema)
    return [
        sql.SQL(GRANT_SCHEMA).format(schema=schema, role=role_name),
        *(
            sql.SQL(GRANT_READ).format(table=sql.Identifier(table.schema, name), role=role_name)
            for name in (table.name, *table.also_read)
        ),
    ]


def scopes_index(table: StoreTable, key: str) -> sql.Composed:
    """`SCOPES_INDEX` on `table`, named after it."""
    from psycopg import sql

    return sql.SQL(SCOPES_INDEX).format(
        name=sql.Identifier(f"{table.name}_aizk_scopes"),
        table=sql.Identifier(table.schema, table.name),
        scopes=_scopes(table, key),
    )


def embedding_index(table: StoreTable) -> sql.Composed:
    """`EMBEDDING_INDEX` on `table`, named after it."""
    from psycopg import sql

    return sql.SQL(EMBEDDING_INDEX).format(
        name=sql.Identifier(f"{table.name}_aizk_embedding"),
        table=sql.Identifier(table.schema, table.name),
        embedding=sql.Identifier(table.embedding),
    )


def reader_ids(scope_ids: Iterable[str]) -> str:
    """The JSON text bound as a reader's ids: every spelling a row may store each id in.

    The reader's ids are canonical text (`_scope_ids.scope_id`), but a row written by hand may
    hold a database id as a number (`7`) or a UUID in upper case, which the packer reads as the
    same id and jsonb does not; so a decimal id is listed as text and as a number, and a UUID
    in lower and upper case. Other UUID spellings (braces, `urn:uuid:`, no hyphens) are not
    matched at the database: `scope_metadata` writes the canonical text.
    """
    spellings: list[str | int] = []
    for each in sorted(set(scope_ids)):
        spellings.append(each)
        if _DECIMAL(each):
            spellings.append(int(each))
        elif _UUID(each):
            spellings.append(each.upper())
    return json.dumps(spellings)


_DECIMAL = re.compile(r"0|-?[1-9][0-9]*").fullmatch
"""The text `scope_id` gives an int: what a number stored in a row is read as."""
_UUID = re.compile(CANONICAL_UUID).fullmatch
