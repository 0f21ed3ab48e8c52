"""The revision resource: the exact stored text an evidence item's `aizk://` URI points at.

A reader follows a URI from their own evidence, so a revision is shown only when every item it
was stored as is one the reader may read, by the packer's own rule (`ScopeDirectory.may_read`).
Anything else answers exactly as a URI that exists nowhere does: a reader who guesses or is
handed another reader's ids learns nothing, not even that they exist.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field

from aizk_integrations import ScopeDirectory
from aizk_integrations._errors import quoted
from aizk_integrations._uuids import resource_uri, uuid_text

RESOURCE_TEMPLATE = "aizk://artifacts/{artifact_id}/contents/{artifact_content_id}"


class StoredText(BaseModel):
    """One stored item of a revision: its text and its scopes, as the store holds them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str = Field(description="The item's text, exactly as stored.")
    scopes: Any = Field(description="The item's scope ids, in any form the packer reads.")


RevisionResolver = Callable[[str, str], Sequence[StoredText]]
"""What finds a revision's items: `(artifact_id, artifact_content_id)`, both canonical UUID text,
to its items in stored order (none when there is no such revision)."""


class RevisionNotFoundError(ValueError):
    """The one answer for a revision the reader may not read and for one that does not exist."""

    def __init__(self, uri: str) -> None:
        super().__init__(f"Resource not found: {uri}")


def canonical_ids(artifact_id: str, artifact_content_id: str) -> tuple[str, str]:
    """Both ids, if both are canonical UUID text, as every resource URI writes them; otherwise a
    clear error saying what the URI must look like."""
    for name, value in (("artifact_id", artifact_id), ("artifact_content_id", artifact_content_id)):
        if uuid_text(value) != value:  # canonical text is its own canonical spelling
            raise ValueError(
                f"malformed resource URI: {name} {quoted(value)} is not a UUID in canonical form "
                f"(lower-case, hyphenated); the URI is {RESOURCE_TEMPLATE}"
            )
    return artifact_id, artifact_content_id


async def revision_text(
    resolver: RevisionResolver, ids: tuple[str, str], reader: ScopeDirectory
) -> str:
    """The revision's stored text, its items in stored order joined by the newline the packer
    joins lines with; `RevisionNotFoundError` unless every item is the reader's to read."""
    items = await anyio.to_thread.run_sync(resolver, *ids)
    if not items or not all(reader.may_read(item.scopes) for item in items):
        raise RevisionNotFoundError(str(resource_uri(*ids)))
    return "\n".join(item.text for item in items)
