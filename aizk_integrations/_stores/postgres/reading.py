"""The transaction a scoped search runs in: what it sets first (the reader's ids for the policy,
pgvector's iterative scan) and learns (whether the policy binds), and what a search on a table
never set up is told instead of the database's error.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from aizk_integrations._stores.postgres.names import StoreTable, table_name

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


ROW_SECURITY_ACTIVE: Final = "SELECT row_security_active(CAST(:table AS regclass))"
"""Whether the policy binds the current role on `:table` (a quoted, schema-qualified name):
false for a superuser, a BYPASSRLS role, or the owner of a table without FORCE."""


def reading(reader_ids: str, table: StoreTable) -> dict[str, str]:
    """`START_READING`'s parameters: the reader's ids (`condition.reader_ids`) and the table
    the query reads."""
    return {"reader_ids": reader_ids, "table": table_name(table)}


def vector_text(embedding: list[float]) -> str:
    """pgvector's text for an embedding (whose values may be numpy's floats)."""
    return "[" + ",".join(str(float(value)) for value in embedding) + "]"


NOT_SET_UP: Final = (
    "this table was never set up for scoped retrieval with this scopes key (the table has no "
    "aizk_ column of the key's scope ids): run the SQL postgres_setup(store, role=...) returns "
    "(given the retriever's scopes_key), once, as the table's owner (docs/postgres.md), then "
    "retrieve again"
)
"""What a scoped query on a table `setup` never ran on is told, in place of the database's
error about a missing function."""


def never_set_up(error: BaseException) -> bool:
    """Whether a database error is a scoped query on a table `setup` never ran on (for its
    scopes key): Postgres's undefined_column (SQLSTATE 42703) naming the scope ids column.
    (psycopg names the state `sqlstate`, psycopg2 `pgcode`, asyncpg `sqlstate` too.)"""
    cause = getattr(error, "orig", error)
    state = getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)
    return state == "42703" and "aizk_" in str(cause)


@contextmanager
def explaining_a_missing_setup() -> Iterator[None]:
    """Around a scoped query's transaction: the database's error about the missing scope ids
    column becomes `NOT_SET_UP`, which says what to run; any other error passes as it is."""
    try:
        yield
    except Exception as error:
        if never_set_up(error):
            raise RuntimeError(NOT_SET_UP) from error
        raise
