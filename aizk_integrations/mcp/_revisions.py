"""The revision resource: the exact stored text an evidence item's `aizk://` URI points at.

A reader follows a URI from their own evidence, so a revision is shown only when every item it
was stored as is one the reader may read, by the packer's own rule (`ScopeDirectory.may_read`).
Anything else answers exactly as a URI that exists nowhere does: a reader who guesses or is
handed another reader's ids learns nothing, not even that they exist.

Each store reads a revision its own way (`RevisionRead`, made in `_lookups`); the rule above is
applied here, once, to whatever any of them returns, and to what an app's own `revisions=`
returns.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple
from uuid import UUID

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field

from aizk_integrations import ScopeDirectory
from aizk_integrations._errors import quoted
from aizk_integrations._uuids import canonical_uuid, resource_uri, uuid_text

RESOURCE_TEMPLATE = "aizk://artifacts/{artifact_id}/contents/{artifact_content_id}"

RevisionIds = tuple[str, str]
"""`(artifact_id, artifact_content_id)`, both canonical UUID text, as the URI writes them."""


class StoredText(BaseModel):
    """One stored item of a revision: its text and its scopes, as the store holds them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str = Field(description="The item's text, exactly as stored.")
    scopes: Any = Field(description="The item's scope ids, in any form the packer reads.")


RevisionResolver = Callable[[str, str], Sequence[StoredText]]
"""An app's own `revisions=`: `(artifact_id, artifact_content_id)`, both canonical UUID text,
to the revision's items in stored order (none when there is no such revision)."""

RevisionRead = Callable[[RevisionIds, ScopeDirectory], Awaitable[Sequence[StoredText]]]
"""How a server reads a revision's items for a reader, in stored order: a store's own lookup,
or the app's `revisions=`. A store that can tell, by itself, that the reader may not read the
revision (Postgres, under row-level security) raises `RevisionNotFoundError`."""


class RevisionNotFoundError(ValueError):
    """The one answer for a revision the reader may not read and for one that does not exist."""

    def __init__(self, ids: RevisionIds) -> None:
        super().__init__(f"Resource not found: {resource_uri(*ids)}")


def canonical_ids(artifact_id: str, artifact_content_id: str) -> RevisionIds:
    """Both ids, if both are canonical UUID text, as every resource URI writes them; otherwise a
    clear error saying what the URI must look like."""
    for name, value in (("artifact_id", artifact_id), ("artifact_content_id", artifact_content_id)):
        if uuid_text(value) != value:  # canonical text is its own canonical spelling
            raise ValueError(
                f"malformed resource URI: {name} {quoted(value)} is not a UUID in canonical form "
                f"(lower-case, hyphenated); the URI is {RESOURCE_TEMPLATE}"
            )
    return artifact_id, artifact_content_id


def canonical(value: object) -> str | None:
    """A stored artifact id as the URI writes it, from any form the packer reads (a `UUID`, or
    any text `uuid.UUID` accepts); `None` for anything else."""
    if isinstance(value, UUID):
        return canonical_uuid(value)
    return uuid_text(value) if isinstance(value, str) else None


def revision_of(metadata: Mapping[str, Any], keys: tuple[str, str]) -> RevisionIds | None:
    """The revision an item's metadata names under `keys`, canonical, or `None` for none."""
    artifact, content = canonical(metadata.get(keys[0])), canonical(metadata.get(keys[1]))
    return None if artifact is None or content is None else (artifact, content)


def resolved(resolver: RevisionResolver) -> RevisionRead:
    """The app's own `revisions=`, run off the event loop (it may block on its own store)."""

    async def read(ids: RevisionIds, reader: ScopeDirectory) -> Sequence[StoredText]:
        return await anyio.to_thread.run_sync(resolver, *ids)

    return read


async def revision_text(read: RevisionRead, ids: RevisionIds, reader: ScopeDirectory) -> str:
    """The revision's stored text, its items in stored order joined by the newline the packer
    joins lines with; `RevisionNotFoundError` unless there is one and every item of it is the
    reader's to read."""
    items = await read(ids, reader)
    if not items or not all(reader.may_read(item.scopes) for item in items):
        raise RevisionNotFoundError(ids)
    return "\n".join(item.text for item in items)


class MetadataKeys(NamedTuple):
    """Where the app's packer reads an item's revision and scopes: its metadata key names."""

    artifact_id: str
    artifact_content_id: str
    scopes: str

    @property
    def revision(self) -> tuple[str, str]:
        return self.artifact_id, self.artifact_content_id


def stored_texts(
    items: Iterable[tuple[str, Mapping[str, Any]]], keys: MetadataKeys, ids: RevisionIds
) -> list[StoredText]:
    """The items a store found for a revision, as `StoredText`s, in the order found: each one
    checked again to be of that revision (read as the packer reads the ids), so a lookup that
    found more than it was asked for cannot add to a revision."""
    return [
        StoredText(text=text, scopes=metadata.get(keys.scopes))
        for text, metadata in items
        if revision_of(metadata, keys.revision) == ids
    ]


def off_the_loop(read: Callable[[RevisionIds], Sequence[StoredText]]) -> RevisionRead:
    """A store's blocking read of a revision, run on a worker thread."""

    async def reading(ids: RevisionIds, reader: ScopeDirectory) -> Sequence[StoredText]:
        return await anyio.to_thread.run_sync(read, ids)

    return reading
