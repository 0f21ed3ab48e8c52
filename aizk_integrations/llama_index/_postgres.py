"""LlamaIndex's `PGVectorStore`, asked for one reader's nodes in its own SQL query.

The store's metadata filters cannot say "every scope of the node is the reader's" (and paste
their values into the SQL text), but the store takes a `customize_query_fn` when it is built: a
public hook that receives each query's SQLAlchemy statement and the keyword arguments of
`query(...)`/`aquery(...)`. `pgvector_scoped_query` is that hook. Scoped retrieval passes the
reader through the query's keyword arguments (`scoped_read`), and the hook marks the statement
with the reader. Just before a marked statement runs, in its own transaction, a listener on
SQLAlchemy's engines sets the reader's ids for row-level security, learns whether the policy
binds (`_postgres.START_READING`), and adds the reader's condition for that case to the
statement, beside the store's own vector ordering (`_postgres.reader_condition`). Every other
query of the store (the app's own retriever, ingestion) runs as the store would run it.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, Select, event, text

from aizk_integrations._scopes.ids import spellings
from aizk_integrations._stores.postgres import (
    START_READING,
    StoreTable,
    reader_condition,
    spelled,
    table_name,
)

SCOPED_READ = "aizk_scoped_read"
"""The keyword argument of `PGVectorStore.query` that carries scoped retrieval's reader."""
READING = "aizk_reading"
"""The statement's execution option that carries its reader to `_start_reading`."""


@dataclass(frozen=True)
class _Reading:
    """A marked statement's reader: their ids (as bound, and how many values), the table read,
    and the scopes key."""

    reader_ids: str
    values: int
    table: StoreTable
    scopes_key: str


def scoped_read(scope_ids: frozenset[str], scopes_key: str) -> dict[str, Any]:
    """The keyword arguments of a store query for a reader of `scope_ids`."""
    return {SCOPED_READ: (scope_ids, scopes_key)}


def pgvector_scoped_query(
    statement: Select[Any], table_class: Any, *args: Any, **kwargs: Any
) -> Select[Any]:
    """The `customize_query_fn` to build a `PGVectorStore` with for scoped retrieval:
    `PGVectorStore.from_params(..., customize_query_fn=pgvector_scoped_query)`.

    On the queries `AizkScopedRetriever` makes, it has the reader's ids set in the statement's
    transaction for row-level security and the readable-row condition added to the statement;
    every other query it returns unchanged. (The store calls it with keyword arguments after the
    two; `*args` is there because the store's annotation says three positional ones.)
    """
    read = kwargs.get(SCOPED_READ)
    if read is None:
        return statement
    scope_ids, scopes_key = read
    values = spellings(scope_ids)
    table = _store_table(table_class.__table__.name, table_class.__table__.schema)
    _listen()
    reading = _Reading(spelled(values), len(values), table, scopes_key)
    return statement.execution_options(**{READING: reading})


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
    reader's condition for whether the policy binds (`_postgres.reader_condition`)."""
    reading = execution_options.get(READING)
    if isinstance(reading, _Reading):
        ids, table = reading.reader_ids, table_name(reading.table)
        started = connection.execute(text(START_READING), {"reader_ids": ids, "table": table})
        condition = reader_condition(
            reading.table, reading.scopes_key, policy=started.one()[-1], ids=reading.values
        )
        statement = statement.where(text(condition).bindparams(reader_ids=ids))
    return statement, multiparams, params
