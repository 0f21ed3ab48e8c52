"""LlamaIndex's `PGVectorStore`, asked for one reader's nodes in its own SQL query.

The store's metadata filters cannot say "every scope of the node is the reader's" (and paste
their values into the SQL text), but the store takes a `customize_query_fn` when it is built: a
public hook that receives each query's SQLAlchemy statement and the keyword arguments of
`query(...)`/`aquery(...)`. `pgvector_scoped_query` is that hook. Scoped retrieval passes the
reader through the query's keyword arguments (`scoped_read`), and the hook adds the exact
readable-row check to the statement, beside the store's own vector ordering, and marks it with
the reader. Just before a marked statement runs, in its own transaction, a listener on
SQLAlchemy's engines sets the reader's ids for row-level security and learns whether the policy
binds (`_postgres.START_READING`); where none does, it adds the scopes index lookup to the
statement. Every other query of the store (the app's own retriever, ingestion) runs as the
store would run it.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, Select, TextClause, event, text

from aizk_integrations._postgres import (
    START_READING,
    StoreTable,
    index_lookup,
    reader_ids,
    table_name,
    within_reader,
)

SCOPED_READ = "aizk_scoped_read"
"""The keyword argument of `PGVectorStore.query` that carries scoped retrieval's reader."""
READING = "aizk_reading"
"""The statement's execution option that carries its reader to `_start_reading`."""


@dataclass(frozen=True)
class _Reading:
    """A marked statement's reader: their ids, the table read, and the index lookup to add
    where no policy binds."""

    reader_ids: str
    table: str
    lookup: TextClause


def scoped_read(scope_ids: frozenset[str], scopes_key: str) -> dict[str, Any]:
    """The keyword arguments of a store query for a reader of `scope_ids`."""
    return {SCOPED_READ: (reader_ids(scope_ids), scopes_key)}


def pgvector_scoped_query(
    statement: Select[Any], table_class: Any, *args: Any, **kwargs: Any
) -> Select[Any]:
    """The `customize_query_fn` to build a `PGVectorStore` with for scoped retrieval:
    `PGVectorStore.from_params(..., customize_query_fn=pgvector_scoped_query)`.

    On the queries `AizkScopedRetriever` makes, it adds the readable-row condition to the store's
    statement and has the reader's ids set in its transaction for row-level security; every other
    query it returns unchanged. (The store calls it with keyword arguments after the two; `*args`
    is there because the store's annotation says three positional ones.)
    """
    read = kwargs.get(SCOPED_READ)
    if read is None:
        return statement
    ids, scopes_key = read
    table = _store_table(table_class.__table__.name, table_class.__table__.schema)
    within = text(within_reader(table, scopes_key)).bindparams(reader_ids=ids)
    lookup = text(index_lookup(table, scopes_key)).bindparams(reader_ids=ids)
    _listen()
    reading = _Reading(ids, table_name(table), lookup)
    return statement.where(within).execution_options(**{READING: reading})


def _store_table(name: str, schema: str | None) -> StoreTable:
    return StoreTable(schema or "public", name, metadata="metadata_")


_LISTENING = threading.Lock()


def _listen() -> None:
    """Set the reader of every statement that carries one, on every engine: `PGVectorStore`
    keeps its engines to itself, so the listener is on SQLAlchemy's `Engine` class (an async
    engine runs its statements on a sync one). Added once, on first use, under a lock, as the
    first requests may come at once."""
    with _LISTENING:
        if not event.contains(Engine, "before_execute", _start_reading):
            event.listen(Engine, "before_execute", _start_reading, retval=True)


def _start_reading(
    connection: Connection,
    statement: Any,
    multiparams: Any,
    params: Any,
    execution_options: Mapping[str, Any],
) -> tuple[Any, Any, Any]:
    """Before a marked statement, in its transaction: the reader's ids for the policy, and
    pgvector's iterative index scan, both local to the transaction; then the statement, with the
    index lookup added unless the policy binds."""
    reading = execution_options.get(READING)
    if isinstance(reading, _Reading):
        started = connection.execute(
            text(START_READING), {"reader_ids": reading.reader_ids, "table": reading.table}
        )
        if not started.one()[-1]:
            statement = statement.where(reading.lookup)
    return statement, multiparams, params
