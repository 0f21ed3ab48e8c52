"""The SQL that keeps each reader of a Postgres + pgvector store to their own rows.

One condition says which rows a reader may read: every scope of the row is one of the reader's
ids, and it has at least one. The row-level security policy carries it with the ids of the
transaction's setting, so that a query that forgot the filter still returns nothing foreign;
the retrievers' queries carry it (or, under the policy, a guard) beside their vector ordering,
with the reader's ids bound as one jsonb parameter. The function and indexes that make it fast,
and the per-transaction settings, are here too.

It is written for readers of any size. A reader's ids are every spelling a row may hold
(`_scope_ids.spellings`): ten thousand scopes, half of them UUIDs, are some 45,000 values. So no
part of the condition compares each row with each of them: the row's scopes are looked up in a
hashed set of the reader's, and the index is asked for the reader's keys only while there are
few enough for it to answer quickly (`INDEX_LOOKUP_MOST`).

Everything the database runs is a named constant below. Identifiers (schemas, tables, columns,
roles, indexes) enter only quoted (`_name`), the scopes key only as a plain name, reader ids
only as bound parameters or through `set_config`. Framework-free and driver-free: the SQL is
text, run by the adapters on SQLAlchemy engines (PGVector's own; for LlamaIndex's PGVectorStore,
one made from the store's connection settings). The stores themselves are known here as data:
their class by name (`PostgresStore`) and their table (`StoreTable`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final

from aizk_integrations._errors import quoted
from aizk_integrations._scopes.ids import Spellings, spellings
from aizk_integrations._stores.plan import is_a

READER_IDS_SETTING: Final = "aizk.reader_ids"
"""The transaction-local setting that carries the request's reader ids to the policy."""

SET_READER_IDS: Final = "SELECT set_config('aizk.reader_ids', :reader_ids, true)"
"""Run first in a transaction of the app's own that reads under the policy, with
`reader_ids(...)`'s JSON text.

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

START_READING: Final = (
    "SELECT set_config('aizk.reader_ids', :reader_ids, true),"
    " set_config('hnsw.iterative_scan', 'relaxed_order', true),"
    " row_security_active(CAST(:table AS regclass))"
)
"""What the retrievers run first in each query's transaction, in one round trip: `SET_READER_IDS`,
`ITERATIVE_SCAN`, and whether the policy binds this role on `:table` (`ROW_SECURITY_ACTIVE`).

Bound, the policy looks the reader's rows up in the scopes index and checks them, and the query
carries only a guard (`reader_condition`) for a table whose policies admit more; a query's own
index lookup would be evaluated row by row after the policy's, at a function call each. Unbound,
the query carries the readable-row condition, lookup and all (`READABLE_ROW`).
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

SCOPE_KEYS_FUNCTION: Final = (
    "CREATE OR REPLACE FUNCTION {schema}.aizk_scope_keys(metadata jsonb, key text)"
    " RETURNS text[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS"
    " $$SELECT ARRAY(SELECT scope::text"
    " FROM jsonb_array_elements(jsonb_path_query_array(metadata -> key, '$[*]')) AS scope)"
    " || '{{*}}'::text[]$$"
)
"""The keys the scopes index holds for a row: the JSON text of each of its scopes (`"sam"`, `7`),
and `*`, which every row has and no scope's JSON text is.

An index expression cannot hold a subquery, so the row's scopes become an array through this
function, created once in the store's schema. GIN answers "shares a key with the reader's" (`&&`)
exactly, with no per-row recheck; asking it for tens of thousands of keys at once costs time
that grows with their square, so a larger reader asks for `*` instead (`INDEX_LOOKUP`): every
row, then the exact check alone (`WITHIN_READER`).
"""

ROW_SCOPES: Final = "jsonb_path_query_array({metadata}::jsonb -> {key}, '$[*]')"
"""The row's scopes as a jsonb array: a bare id as a list of one, no scopes as `[]`. The cast is
a no-op on a jsonb column (PGVector's `cmetadata`, LlamaIndex's `metadata_` with
`use_jsonb=True`) and converts LlamaIndex's default json column."""

ROW_VALUE: Final = "({metadata}::jsonb -> {key})"
"""The row's scopes as stored (a list, a bare id, or NULL without the key), for containment."""

ROW_KEYS: Final = "{schema}.aizk_scope_keys({metadata}::jsonb, {key})"
"""The row's index keys (`SCOPE_KEYS_FUNCTION`): the expression the scopes index is built on and
the condition asks it for, written the same in both so the planner matches them."""

INDEX_LOOKUP_MOST: Final = 4096
"""Reader ids the scopes index is asked for at most: 4,096 took 20 ms, 16,000 took 250 ms and
32,000 a second, on a table of 100,000 rows. Past it a reader is answered from every row."""

WITHIN_READER: Final = (
    "{scopes} <> '[]'::jsonb"
    " AND NOT EXISTS (SELECT FROM jsonb_array_elements({scopes}) AS scope"
    " WHERE scope::text NOT IN (SELECT jsonb_array_elements({reader_ids})::text))"
)
"""Exactly the rows the reader may read: they have at least one scope, and none of their scopes
is missing from the reader's ids.

Scopes compare as JSON text, so `7` matches only the number 7 and `"7"` only the string (the ids
hold every spelling a row may have stored, `reader_ids`), and `7.0`, `true`, `null`, an object
or a nested list match nothing, as the packer reads them. The reader's ids are read once per
query into a hashed set, so each row costs the same for a reader of one id or of 45,000. A row
in no scope (`[]`) has no owner.
"""

INDEX_LOOKUP: Final = (
    "{keys} && (SELECT CASE WHEN cardinality(reader.keys) <= {most} THEN reader.keys"
    " ELSE '{{*}}'::text[] END"
    " FROM (SELECT ARRAY(SELECT jsonb_array_elements({reader_ids})::text) AS keys) AS reader)"
)
"""The row shares an index key with the reader (`SCOPE_KEYS_FUNCTION`): implied by
`WITHIN_READER`, and what the scopes index answers, so that a rare reader's rows are looked up,
not scanned for. Past `INDEX_LOOKUP_MOST` ids the key asked for is `*`, every row's."""

READABLE_ROW: Final = "({lookup} AND {within})"
"""A row the reader may read, found through the scopes index: the policy's condition, and a
query's where no policy binds. Under row-level security only the policy's own conditions may
drive an index (a query's are not leakproof, so are evaluated after it), so the policy carries
the lookup."""

CONTAINED_IN_READER: Final = "({scopes} <@ {reader_ids} AND {scopes} <> '[]'::jsonb)"
"""Under the policy, a query's guard for a reader of few ids (`CONTAINMENT_MOST`): the policy has
already held each row to the reader, exactly, before the query's conditions are evaluated; this
keeps a table whose policies admit more from sending the client another reader's rows, at a
tenth of `WITHIN_READER`'s cost a row. jsonb containment (`<@`) compares a row's scopes with each
of the reader's values in turn, so for a larger reader the hashed check costs less. (It reads
`7.0` as 7, which the re-check after the query withholds, as the policy already did.)"""

CONTAINMENT_MOST: Final = 64
"""Reader ids up to which a query under the policy guards with `CONTAINED_IN_READER`."""

BOUND_READER_IDS: Final = "CAST(:reader_ids AS jsonb)"
"""A query's reader ids: one bound parameter, the JSON text of `reader_ids(...)`."""

TRANSACTION_READER_IDS: Final = "NULLIF(current_setting('aizk.reader_ids', true), '')::jsonb"
"""The policy's reader ids: the transaction's setting. Never set, `current_setting(..., true)` is
NULL; set by an earlier transaction on the same connection, it reads `''`. Both become NULL,
which names no id, so no row is readable."""

PGVECTOR_SEARCH: Final = (
    "SELECT {rows}.id, {rows}.document, {rows}.cmetadata,"
    " {rows}.embedding {distance} CAST(:embedding AS vector) AS distance"
    " FROM {rows} JOIN {collections} ON {rows}.collection_id = {collections}.uuid"
    " WHERE {collections}.name = :collection AND {condition}"
    " ORDER BY distance LIMIT :top"
)
"""langchain-postgres's `PGVector` search as the store writes it (its collection, joined by name,
its distance, nearest first), with the reader's condition beside the ordering. Written out here
rather than built from the store's ORM classes on every request, which cost twice the time."""

PGVECTORSTORE_SEARCH: Final = (
    "SELECT {rows}.node_id, {rows}.text, {rows}.metadata_,"
    " {rows}.embedding <=> CAST(:embedding AS {vector}) AS distance"
    " FROM {rows} WHERE {condition}"
    " ORDER BY distance LIMIT :top"
)
"""LlamaIndex's `PGVectorStore` search as the store writes it (its default query mode: its table,
cosine distance, nearest first; `halfvec` for a store made with `use_halfvec`), with the
reader's condition beside the ordering."""

HNSW_SEARCH: Final = (
    "SELECT set_config('hnsw.ef_search', :ef_search, true),"
    " set_config('enable_bitmapscan', 'off', true)"
)
"""What a `PGVectorStore` made with `hnsw_kwargs` runs before each of its searches, local to the
query's transaction: its `hnsw_ef_search`, and no bitmap scans, so that every search goes
through the HNSW index (where the iterative scan keeps it full). The store itself runs the first
as a plain `SET`, which stays with the pooled connection."""

PGVECTOR_DISTANCES: Final = {
    "cosine_distance": "<=>",
    "l2_distance": "<->",
    "max_inner_product": "<#>",
}
"""pgvector's operator for each distance a `PGVector` may order by, named as the comparator its
`distance_strategy` gives (`EmbeddingStore.embedding.cosine_distance`, ...) is."""

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

SCOPES_INDEX: Final = "CREATE INDEX IF NOT EXISTS {name} ON {table} USING gin ({keys})"
"""GIN over the row's index keys: what answers `INDEX_LOOKUP`."""

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
search reads its collection in `langchain_pg_collection`."""


def llama_index_table(table_name: str, schema_name: str = "public") -> StoreTable:
    """LlamaIndex's `PGVectorStore(table_name=..., schema_name=...)`: its own `data_` table,
    named in lower case as the store names it."""
    return StoreTable(schema_name.lower(), f"data_{table_name.lower()}", metadata="metadata_")


def readable_row(table: StoreTable, key: str) -> str:
    """`READABLE_ROW` for a query's WHERE where no policy binds: `table`'s scopes under `key`,
    within the ids bound as `:reader_ids` (`BOUND_READER_IDS`), for SQLAlchemy's `text()`. The
    metadata column is named with its table, as a query joining another table (PGVector's
    collection) needs."""
    return _readable(table, key, BOUND_READER_IDS)


def within_reader(table: StoreTable, key: str) -> str:
    """`WITHIN_READER` with the bound ids, in parentheses: what a query always carries."""
    return f"({_within(table, key, BOUND_READER_IDS)})"


def index_lookup(table: StoreTable, key: str) -> str:
    """`INDEX_LOOKUP` with the bound ids, in parentheses: what a query carries besides where no
    policy binds (`START_READING`), so that it is `readable_row`."""
    return f"({_lookup(table, key, BOUND_READER_IDS)})"


def reader_condition(table: StoreTable, key: str, *, policy: bool, ids: int) -> str:
    """What a query of `table` carries for a reader of `ids` values (bound as `:reader_ids`):
    where no policy binds (`START_READING`), the readable-row condition with its index lookup;
    under the policy, which has looked the rows up and checked them, a guard: containment for a
    reader of few ids, the exact hashed check for more."""
    if not policy:
        return readable_row(table, key)
    if ids <= CONTAINMENT_MOST:
        scopes = ROW_VALUE.format(metadata=_column(table), key=_key(key))
        return CONTAINED_IN_READER.format(scopes=scopes, reader_ids=BOUND_READER_IDS)
    return within_reader(table, key)


def pgvector_search(key: str, distance: str, *, policy: bool, ids: int) -> str:
    """`PGVECTOR_SEARCH` for `distance` (a `PGVECTOR_DISTANCES` name), with the reader's
    condition (`reader_condition`)."""
    table = PGVECTOR_TABLE
    condition = reader_condition(table, key, policy=policy, ids=ids)
    return PGVECTOR_SEARCH.format(
        rows=table_name(table),
        collections=_table(table, table.also_read[0]),
        distance=PGVECTOR_DISTANCES[distance],
        condition=condition,
    )


def pgvectorstore_search(
    table: StoreTable, key: str, *, halfvec: bool, policy: bool, ids: int
) -> str:
    """`PGVECTORSTORE_SEARCH` on `table`, with the reader's condition (`reader_condition`)."""
    condition = reader_condition(table, key, policy=policy, ids=ids)
    vector = "halfvec" if halfvec else "vector"
    return PGVECTORSTORE_SEARCH.format(rows=table_name(table), vector=vector, condition=condition)


def table_name(table: StoreTable) -> str:
    """`table`'s quoted, schema-qualified name: `START_READING`'s `:table`."""
    return _table(table, table.name)


def _readable(table: StoreTable, key: str, reader_ids: str) -> str:
    lookup, within = _lookup(table, key, reader_ids), _within(table, key, reader_ids)
    return READABLE_ROW.format(lookup=lookup, within=within)


def _lookup(table: StoreTable, key: str, reader_ids: str) -> str:
    keys = ROW_KEYS.format(schema=_name(table.schema), metadata=_column(table), key=_key(key))
    return INDEX_LOOKUP.format(keys=keys, reader_ids=reader_ids, most=INDEX_LOOKUP_MOST)


def _within(table: StoreTable, key: str, reader_ids: str) -> str:
    scopes = ROW_SCOPES.format(metadata=_column(table), key=_key(key))
    return WITHIN_READER.format(scopes=scopes, reader_ids=reader_ids)


def _column(table: StoreTable) -> str:
    """The metadata column named with its table, as a query joining another table needs."""
    return f"{_name(table.name)}.{_name(table.metadata)}"


def row_security(table: StoreTable, key: str) -> list[str]:
    """The statements that put `table` under the reader policy, in order (run once, as its
    owner or a superuser, after `scope_keys_function`)."""
    name = _table(table, table.name)
    readable = _readable(table, key, TRANSACTION_READER_IDS)
    return [
        ENABLE_ROW_SECURITY.format(table=name),
        FORCE_ROW_SECURITY.format(table=name),
        READER_POLICY.format(table=name, readable=readable),
    ]


def reading_grants(role: str, table: StoreTable) -> list[str]:
    """What `role` needs to search `table`, and no more."""
    return [
        GRANT_SCHEMA.format(schema=_name(table.schema), role=_name(role)),
        *(
            GRANT_READ.format(table=_table(table, name), role=_name(role))
            for name in (table.name, *table.also_read)
        ),
    ]


def scope_keys_function(table: StoreTable) -> str:
    """`SCOPE_KEYS_FUNCTION` in `table`'s schema."""
    return SCOPE_KEYS_FUNCTION.format(schema=_name(table.schema))


def scopes_index(table: StoreTable, key: str) -> str:
    """`SCOPES_INDEX` on `table`, named after it."""
    keys = ROW_KEYS.format(
        schema=_name(table.schema), metadata=_name(table.metadata), key=_key(key)
    )
    return SCOPES_INDEX.format(
        name=_name(f"{table.name}_aizk_scopes"), table=_table(table, table.name), keys=keys
    )


def embedding_index(table: StoreTable) -> str:
    """`EMBEDDING_INDEX` on `table`, named after it."""
    return EMBEDDING_INDEX.format(
        name=_name(f"{table.name}_aizk_embedding"),
        table=_table(table, table.name),
        embedding=_name(table.embedding),
    )


def setup(table: StoreTable, key: str, role: str) -> list[str]:
    """Everything a migration runs once, in order, as the table's owner: the scope keys function,
    both indexes, row-level security with the reader policy, and `role`'s read grants."""
    return [
        scope_keys_function(table),
        scopes_index(table, key),
        embedding_index(table),
        *row_security(table, key),
        *reading_grants(role, table),
    ]


def reader_ids(scope_ids: Iterable[str]) -> str:
    """The JSON text bound or set as a reader's ids: every value a row may store for any of the
    reader's canonical `scope_ids` (`_scope_ids.spellings`), texts then numbers."""
    return spelled(spellings(scope_ids))


def spelled(values: Spellings) -> str:
    """`reader_ids` of the spellings already worked out."""
    return json.dumps([*values.texts, *values.numbers])


def reading(values: Spellings, table: StoreTable) -> dict[str, str]:
    """`START_READING`'s parameters: the reader's ids and the table the query reads."""
    return {"reader_ids": spelled(values), "table": table_name(table)}


def vector_text(embedding: list[float]) -> str:
    """pgvector's text for an embedding (whose values may be numpy's floats)."""
    return "[" + ",".join(str(float(value)) for value in embedding) + "]"


def _name(identifier: str) -> str:
    """An identifier as Postgres quotes one: in double quotes, each of its own doubled. Refused
    if it holds a colon, which SQLAlchemy's `text()` (which runs the composed SQL) could read as
    a bound parameter, or NUL, which no identifier holds."""
    if ":" in identifier or "\x00" in identifier:
        raise ValueError(
            f"a Postgres store's schema, table, column and role names may not hold a colon or "
            f"NUL, which the composed SQL cannot carry: {quoted(identifier)}"
        )
    return '"' + identifier.replace('"', '""') + '"'


def _table(table: StoreTable, name: str) -> str:
    return f"{_name(table.schema)}.{_name(name)}"


def _key(key: str) -> str:
    """The scopes key as a SQL string literal: a plain name, so it needs no escaping and holds
    nothing `text()` would bind."""
    if not key.isidentifier():
        raise ValueError(
            "the scopes key of a Postgres store must be a plain name (letters, digits and _, "
            f"not starting with a digit), not {quoted(key)}"
        )
    return f"'{key}'"


NOT_SET_UP: Final = (
    "this table was never set up for scoped retrieval (the database has no aizk_scope_keys "
    "function): run the SQL postgres_setup(store, role=...) returns, once, as the table's "
    "owner (docs/postgres.md), then retrieve again"
)
"""What a scoped query on a table `setup` never ran on is told, in place of the database's
error about a missing function."""


def never_set_up(error: BaseException) -> bool:
    """Whether a database error is a scoped query on a table `setup` never ran on: Postgres's
    undefined_function (SQLSTATE 42883) naming the scope keys function. (psycopg names the
    state `sqlstate`, psycopg2 `pgcode`.)"""
    cause = getattr(error, "orig", error)
    state = getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)
    return state == "42883" and "aizk_scope_keys" in str(cause)


@contextmanager
def explaining_a_missing_setup() -> Iterator[None]:
    """Around a scoped query's transaction: the database's error about the missing scope keys
    function becomes `NOT_SET_UP`, which says what to run; any other error passes as it is."""
    try:
        yield
    except Exception as error:
        if never_set_up(error):
            raise RuntimeError(NOT_SET_UP) from error
        raise


@dataclass(frozen=True)
class PostgresStore:
    """A framework's Postgres store: its class, named by the package that exports it (`is_a`),
    how messages name it, and the table a store of it keeps its rows in."""

    module: str
    name: str
    title: str
    table: Callable[[Any], StoreTable]

    def holds(self, store: object) -> bool:
        return is_a(store, self.module, self.name)


PGVECTOR: Final = PostgresStore(
    "langchain_postgres",
    "PGVector",
    "langchain-postgres's PGVector store",
    lambda _: PGVECTOR_TABLE,
)
PGVECTORSTORE: Final = PostgresStore(
    "llama_index.vector_stores.postgres",
    "PGVectorStore",
    "LlamaIndex's PGVectorStore",
    lambda store: llama_index_table(store.table_name, store.schema_name),
)


def store_setup(kind: PostgresStore, store: object, role: str, scopes_key: str) -> list[str]:
    """`setup` of the table of `store`, which must be a `kind`: what each adapter's
    `postgres_setup` returns for its framework's store."""
    if not kind.holds(store):
        raise TypeError(f"postgres_setup takes {kind.title}, not {type(store).__name__}")
    return setup(kind.table(store), scopes_key, role)
