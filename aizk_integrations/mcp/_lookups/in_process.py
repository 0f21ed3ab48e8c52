"""An index of revisions for the in-process stores, which keep their items in plain dicts.

LangChain's `InMemoryVectorStore` (`store.store`), FAISS's docstore (`index_to_docstore_id`) and
LlamaIndex's `SimpleVectorStore` (`data.metadata_dict`, the text in the index's docstore) have
no lookup by metadata: asking any of them for a revision walks every item (a read was 7.8-44x
slower at 20,000 items than at 1,000). So the walk is made once, into an index from each
revision to its items' ids in stored order, and a read costs what the revision costs, save for
the check below.

The index is never stale. It keeps a shallow copy of the store's own map of items (`held`), and
each read first compares the map with that copy: an item added, deleted or replaced, by any of
the store's calls, makes a map that differs, and the index is rebuilt before it is used.
Entries that are the same object compare without being read, so the check is one pass in C
over the keys, not a read of each item: it is the one part of a read that grows with the store
(0.5 ms at 20,000 items in bench/mcp_recall.py, where a walk reading each item took 200 ms), and
the price of never serving a stale index, since a plain dict says nothing of its changes. An
entry replaced by an equal one compares by value and keeps the index, as it should. Each item
the index names is then read from the store again and its revision checked again, so an entry
edited in place behind the store's calls is dropped rather than misfiled. (An entry edited in
place *into* a revision, bypassing every store call, is the one change a dict cannot show
without a walk.)

This is not a cache keyed by an object's identity: one index belongs to one server, built for
the store that server reads, and its validity is decided by the store's content every time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from aizk_integrations.mcp._revisions import RevisionIds

Listed = Callable[[Mapping[Any, Any]], Iterable[tuple[str, Mapping[str, Any]]]]
"""From a copy of the store's map, each item's id and metadata, in stored order."""


class RevisionIndex:
    """Each revision's item ids, in stored order, for one in-process store; see the module."""

    def __init__(
        self,
        held: Callable[[], Mapping[Any, Any]],
        listed: Listed,
        revision: Callable[[Mapping[str, Any]], RevisionIds | None],
    ) -> None:
        self._held, self._listed, self._revision = held, listed, revision
        self._lock = threading.Lock()
        self._copy: dict[Any, Any] | None = None
        self._index: dict[RevisionIds, tuple[str, ...]] = {}

    def ids_of(self, revision: RevisionIds) -> tuple[str, ...]:
        """The ids of the items stored under `revision`, in stored order, as the store holds
        them now."""
        with self._lock:
            now = self._held()
            if self._copy is None or self._copy != now:
                self._copy = dict(now)
                self._index = self._built(self._copy)
            return self._index.get(revision, ())

    def _built(self, copy: Mapping[Any, Any]) -> dict[RevisionIds, tuple[str, ...]]:
        index: dict[RevisionIds, list[str]] = {}
        for item_id, metadata in self._listed(copy):
            found = self._revision(metadata)
            if found is not None:
                index.setdefault(found, []).append(item_id)
        return {revision: tuple(ids) for revision, ids in index.items()}
