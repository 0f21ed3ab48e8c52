"""A revision in Qdrant: `scroll` with a payload filter on both ids, page by page.

Qdrant lists points in the order of their ids, which is the only order it keeps: a revision
stored as several points reads back in the order of their ids.
"""

from __future__ import annotations

from typing import Any

from aizk_integrations._scopes.ids import uuid_spellings
from aizk_integrations.mcp._revisions import MetadataKeys, RevisionIds

PAGE = 256
"""Points asked for per `scroll` call."""


def revision_filter(prefix: str, keys: MetadataKeys, ids: RevisionIds) -> Any:
    """Both ids under the payload `prefix`, each in every spelling the packer reads as it."""
    from qdrant_client.http import models  # the store's own package, loaded by the app already

    return models.Filter(
        must=[
            models.FieldCondition(
                key=f"{prefix}{key}", match=models.MatchAny(any=list(uuid_spellings(value)))
            )
            for key, value in zip(keys.revision, ids, strict=True)
        ]
    )


def scrolled(client: Any, collection: str, scroll_filter: Any) -> list[Any]:
    """Every point the filter matches, in the order Qdrant lists them, with its payload."""
    points: list[Any] = []
    offset = None
    while True:
        page, offset = client.scroll(
            collection_name=collection,
            scroll_filter=scroll_filter,
            limit=PAGE,
            offset=offset,
            with_payload=True,
            with_vectors=False,
        )
        points += page
        if offset is None:
            return points
