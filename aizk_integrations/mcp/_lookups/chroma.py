"""A revision in Chroma: the collection's own `get` with a `where` on both ids."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from aizk_integrations._scopes.ids import uuid_spellings
from aizk_integrations.mcp._revisions import MetadataKeys, RevisionIds, StoredText, stored_texts

Get = Callable[..., Mapping[str, Any]]
"""A Chroma collection's `get` (LlamaIndex's store's `client`), or LangChain's `Chroma.get`."""


def revision_where(keys: MetadataKeys, ids: RevisionIds) -> dict[str, Any]:
    """Both ids, each in every spelling the packer reads as it (Chroma compares stored text)."""
    return {
        "$and": [
            {key: {"$in": list(uuid_spellings(value))}}
            for key, value in zip(keys.revision, ids, strict=True)
        ]
    }


def chroma_revision(get: Get, keys: MetadataKeys, ids: RevisionIds) -> list[StoredText]:
    """The revision's items in the order Chroma added them, their text as stored."""
    found = get(where=revision_where(keys, ids), include=["documents", "metadatas"])
    return stored_texts(zip(found["documents"], found["metadatas"], strict=True), keys, ids)
