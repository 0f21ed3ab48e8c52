"""What the filter languages of the stores both adapters support can say about one reader.

A store filter matches stored values, so it is asked for every spelling of the reader's ids
(`_scope_ids.spellings`), texts and numbers apart. How a filter grows with the reader decides
the plan: up to a store's `most` values the reader goes into the query; past it the query
would fail or crawl (Chroma caps an expression at depth 1000, takes seconds over thousands of
clauses and crashed near ten thousand; Qdrant's local mode compares every stored value with
every value of the filter), so the store is paged unfiltered instead and every item checked
exactly. The framework adapters wrap these in one small class per store (`_stores`); the store
packages are imported only once a store of theirs is in hand.
"""

from __future__ import annotations

from typing import Any

from aizk_integrations._scopes.ids import Spellings, spellings

CHROMA_MOST_VALUES = 256
"""Spellings a Chroma `where` names at most: at 256 a query took 45 ms against 5 ms for one."""
QDRANT_MOST_VALUES = 1024
"""Spellings a Qdrant server's filter names at most: it answers them from its payload index."""
QDRANT_LOCAL_MOST_VALUES = 64
"""Spellings a filter names at most in Qdrant's local mode (`":memory:"` or a path), which
compares every stored value with every value of a filter: 30 ms a query for one value over
2,000 points, 100 ms for 100, 770 ms for 1,000, where a page of the unfiltered ranking took 2."""


def chroma_where(key: str, scope_ids: frozenset[str]) -> dict[str, Any] | None:
    """A Chroma `where` that every item the reader may read meets, or `None` past
    `CHROMA_MOST_VALUES`: then the store is paged unfiltered.

    Necessary, not exact: Chroma can say that a list holds one of the reader's values
    (`$contains`, one clause per value, lists only) or that a single value is one of them
    (`$in`, single values only, one type per clause), not that a list holds only the reader's.
    """
    values = _within(scope_ids, CHROMA_MOST_VALUES)
    if values is None:
        return None
    clauses: list[dict[str, Any]] = [{key: {"$in": list(values.texts)}}]
    if values.numbers:
        clauses.append({key: {"$in": list(values.numbers)}})
    clauses += [{key: {"$contains": value}} for value in (*values.texts, *values.numbers)]
    return {"$or": clauses}


def qdrant_filter(key: str, scope_ids: frozenset[str], client: Any) -> Any | None:
    """A Qdrant filter for the reader's items, or `None` past what `client` answers well
    (`QDRANT_MOST_VALUES`, `QDRANT_LOCAL_MOST_VALUES` in local mode): then the store is paged
    unfiltered.

    Exact for items whose scopes are texts: one of them is the reader's (`MatchAny`) and none
    is not (`must_not` `MatchExcept`, which on a list means "some value outside these"). A
    condition takes values of one type, so an item holding a number is let through when one of
    its numbers is the reader's, and re-checked.
    """
    options = getattr(client, "init_options", None) or {}
    local = options.get("location") == ":memory:" or options.get("path") is not None
    values = _within(scope_ids, QDRANT_LOCAL_MOST_VALUES if local else QDRANT_MOST_VALUES)
    if values is None:
        return None
    from qdrant_client.http import models  # the store's own package, loaded by the app already

    texts = list(values.texts)
    exact = models.Filter(
        must=[models.FieldCondition(key=key, match=models.MatchAny(any=texts))],
        must_not=[models.FieldCondition(key=key, match=models.MatchExcept(**{"except": texts}))],
    )
    if not values.numbers:
        return exact
    numbers = models.FieldCondition(key=key, match=models.MatchAny(any=list(values.numbers)))
    return models.Filter(should=[exact, numbers])


def _within(scope_ids: frozenset[str], most: int) -> Spellings | None:
    """The reader's spellings, or `None` when there are more than `most` of them."""
    if len(scope_ids) > most:  # every id has at least one spelling: no need to spell them
        return None
    values = spellings(scope_ids)
    return values if len(values) <= most else None
