"""How the library names a Postgres store's tables and columns in the SQL it composes: the
store's table as data (`StoreTable`, `PGVECTOR_TABLE`, `llama_index_table`), the stores' classes as
data (`PostgresStore`: `PGVECTOR`, `PGVECTORSTORE`), and identifiers quoted as Postgres quotes them
(`identifier`, `qualified`), the scopes key only as a plain name (`key_literal`). Nothing the
database runs is assembled from anything else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from aizk_integrations._errors import quoted
from aizk_integrations._stores.plan import is_a


@dataclass(frozen=True)
class StoreTable:
    """Where a store keeps its rows: the table, its metadata (json or jsonb) and vector columns,
    the tables of the same schema its searches read besides, and the column holding the scopes
    themselves, for a store that keeps them in a column of their own rather than under the
    scopes key of the metadata."""

    schema: str
    name: str
    metadata: str
    embedding: str = "embedding"
    also_read: tuple[str, ...] = ()
    scopes_column: str | None = None


PGVECTOR_TABLE: Final = StoreTable(
    "public", "langchain_pg_embedding", metadata="cmetadata", also_read=("langchain_pg_collection",)
)
"""langchain-postgres's `PGVector`: every collection's rows in one table, metadata as jsonb; each
search reads its collection in `langchain_pg_collection`."""


def llama_index_table(table_name: str, schema_name: str = "public") -> StoreTable:
    """LlamaIndex's `PGVectorStore(table_name=..., schema_name=...)`: its own `data_` table,
    named in lower case as the store names it."""
    return StoreTable(schema_name.lower(), f"data_{table_name.lower()}", metadata="metadata_")


def table_name(table: StoreTable) -> str:
    """`table`'s quoted, schema-qualified name: `START_READING`'s `:table`."""
    return qualified(table, table.name)


def metadata_column(table: StoreTable) -> str:
    """The metadata column named with its table, as a query joining another table needs."""
    return f"{identifier(table.name)}.{identifier(table.metadata)}"


def identifier(name: str) -> str:
    """An identifier as Postgres quotes one: in double quotes, each of its own doubled. Refused
    if it holds a colon, which SQLAlchemy's `text()` (which runs the composed SQL) could read as
    a bound parameter, or NUL, which no identifier holds."""
    if ":" in name or "\x00" in name:
        raise ValueError(
            f"a Postgres store's schema, table, column and role names may not hold a colon or "
            f"NUL, which the composed SQL cannot carry: {quoted(name)}"
        )
    return '"' + name.replace('"', '""') + '"'


def qualified(table: StoreTable, name: str) -> str:
    """`name`, a table of `table`'s schema, quoted and schema-qualified."""
    return f"{identifier(table.schema)}.{identifier(name)}"


def plain_key(key: str) -> str:
    """The scopes key, refused unless it is a plain name, so that it needs no escaping in a
    string literal or a column's name and holds nothing `text()` would bind."""
    if not key.isidentifier():
        raise ValueError(
            "the scopes key of a Postgres store must be a plain name (letters, digits and _, "
            f"not starting with a digit), not {quoted(key)}"
        )
    return key


def key_literal(key: str) -> str:
    """The scopes key as a SQL string literal (`plain_key`)."""
    return f"'{plain_key(key)}'"


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
