"""The retrievers' searches: each store's own search, as the store writes it, with the reader's
condition (`condition.reader_condition`) beside its vector ordering.
"""

from __future__ import annotations

from typing import Final

from aizk_integrations._stores.postgres.condition import reader_condition
from aizk_integrations._stores.postgres.names import (
    PGVECTOR_TABLE,
    StoreTable,
    identifier,
    qualified,
    table_name,
)

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


COLUMNS_SEARCH: Final = (
    "SELECT {columns}, {rows}.{embedding} {distance} CAST(:embedding AS vector) AS distance"
    " FROM {rows} WHERE {condition}"
    " ORDER BY distance LIMIT :top"
)
"""langchain-postgres's `PGVectorStore` search as the store writes it (its table, the columns it
was made with, its distance strategy's operator, nearest first), with the reader's condition
beside the ordering."""


DISTANCE_STRATEGIES: Final = {
    "COSINE_DISTANCE": "<=>",
    "EUCLIDEAN": "<->",
    "INNER_PRODUCT": "<#>",
}
"""pgvector's operator for each `DistanceStrategy` a `PGVectorStore` may order by, by name: the
operator the store orders by (for inner product, the negated product, smaller first)."""


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


def pgvector_search(key: str, distance: str, *, policy: bool) -> str:
    """`PGVECTOR_SEARCH` for `distance` (a `PGVECTOR_DISTANCES` name), with the reader's
    condition (`reader_condition`)."""
    table = PGVECTOR_TABLE
    condition = reader_condition(table, key, policy=policy)
    return PGVECTOR_SEARCH.format(
        rows=table_name(table),
        collections=qualified(table, table.also_read[0]),
        distance=PGVECTOR_DISTANCES[distance],
        condition=condition,
    )


def pgvectorstore_search(table: StoreTable, key: str, *, halfvec: bool, policy: bool) -> str:
    """`PGVECTORSTORE_SEARCH` on `table`, with the reader's condition (`reader_condition`)."""
    condition = reader_condition(table, key, policy=policy)
    vector = "halfvec" if halfvec else "vector"
    return PGVECTORSTORE_SEARCH.format(rows=table_name(table), vector=vector, condition=condition)


def columns_search(
    table: StoreTable, key: str, columns: list[str], distance: str, *, policy: bool
) -> str:
    """`COLUMNS_SEARCH` on `table`, returning `columns` (named as they are, for the rows'
    mappings), ordered by `distance` (a `DISTANCE_STRATEGIES` name), with the reader's
    condition (`reader_condition`)."""
    rows = table_name(table)
    return COLUMNS_SEARCH.format(
        columns=", ".join(f"{rows}.{identifier(column)}" for column in columns),
        rows=rows,
        embedding=identifier(table.embedding),
        distance=DISTANCE_STRATEGIES[distance],
        condition=reader_condition(table, key, policy=policy),
    )
