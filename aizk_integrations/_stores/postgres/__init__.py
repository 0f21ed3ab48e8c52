"""The SQL that keeps each reader of a Postgres + pgvector store to their own rows.

One condition says which rows a reader may read: every scope of the row is one of the reader's
ids, and it has at least one (`condition`). The row-level security policy carries it with the ids
of the transaction's setting, so that a query that forgot the filter still returns nothing
foreign; the retrievers' searches carry it (or, under the policy, a guard) beside their vector
ordering (`search`), in a transaction that first sets the reader's ids and learns whether the
policy binds (`reading`). A migration run once by the table's owner creates the functions that
read a stored scope as the packer reads it, a column of each row's canonical scope ids that the
database keeps, the indexes that make the condition fast, and the policy and grants (`setup`).

Everything the database runs is a named constant. Identifiers (schemas, tables, columns, roles,
indexes) enter only quoted, the scopes key only as a plain name (`names`), reader ids only as
bound parameters or through `set_config`. Framework-free and driver-free: the SQL is text, run
by the adapters on SQLAlchemy engines. The stores themselves are known here as data: their class
by name (`names.PostgresStore`) and their table (`names.StoreTable`).
"""
