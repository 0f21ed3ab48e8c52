"""Reading a framework item's text and metadata, with errors that name the field."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import NamedTuple
from uuid import UUID

from aizk_integrations.candidate import Lane, scope_ids

_LANES = {lane.value: lane for lane in Lane}
_ALLOWED_LANES = ", ".join(_LANES)
_CANONICAL_UUID = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
).fullmatch


class MetadataFieldError(ValueError):
    """A field of one item is malformed; the caller adds which item it was."""


class MetadataKeys(NamedTuple):
    """The metadata key each field is read from; every name is an adapter setting."""

    lane: str
    scopes: str
    artifact_id: str
    artifact_content_id: str


class Row(NamedTuple):
    """One item as read: every field checked, nothing public built yet.

    The adapters read items far more often than they keep them, so a row stays a tuple with the
    artifact ids as canonical UUID text (which is all a resource URI needs), and only the kept
    rows become public models. It has the attributes the walks read of a `Candidate`.
    """

    lane: Lane
    line: str
    scopes: frozenset[str]
    artifact_id: str | None
    artifact_content_id: str | None

    @property
    def resource_uri(self) -> str | None:
        """Same URI as `Candidate.resource_uri`, from ids already in canonical form."""
        if self.artifact_id is None or self.artifact_content_id is None:
            return None
        return f"aizk://artifacts/{self.artifact_id}/contents/{self.artifact_content_id}"


def read_item(text: object, metadata: object, keys: MetadataKeys) -> Row:
    """Read an item's text and metadata, refusing anything malformed.

    Absent keys take the design's defaults (lane `sources`, no scopes, no artifact). The
    metadata is only read, never changed.
    """
    if not isinstance(text, str):
        raise MetadataFieldError(f"content must be text (str), got {type(text).__name__}")
    # `dict` first: every framework hands over one, and the ABC check costs more than it.
    if type(metadata) is not dict and not isinstance(metadata, Mapping):
        raise MetadataFieldError(
            f"metadata must be a mapping (dict), got {type(metadata).__name__}"
        )
    lane = metadata.get(keys.lane, Lane.SOURCES)
    if not isinstance(lane, str) or lane not in _LANES:
        raise MetadataFieldError(f"metadata {keys.lane!r} is {lane!r}; allowed: {_ALLOWED_LANES}")
    raw_scopes = metadata.get(keys.scopes)
    try:
        scopes = frozenset() if raw_scopes is None else scope_ids(raw_scopes)
    except TypeError as error:
        raise MetadataFieldError(f"metadata {keys.scopes!r}: {error}") from None
    artifact_id = metadata.get(keys.artifact_id)
    content_id = metadata.get(keys.artifact_content_id)
    # Absent ids and canonical UUID text, the usual cases, are already what a row holds.
    if not (artifact_id is None or (type(artifact_id) is str and _CANONICAL_UUID(artifact_id))):
        artifact_id = _uuid_text(artifact_id, keys.artifact_id)
    if not (content_id is None or (type(content_id) is str and _CANONICAL_UUID(content_id))):
        content_id = _uuid_text(content_id, keys.artifact_content_id)
    return Row(_LANES[lane], text, scopes, artifact_id, content_id)


def _uuid_text(value: object, key: str) -> str:
    """A UUID, or any other text `uuid.UUID` accepts, as canonical UUID text."""
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, str):
        try:
            return str(UUID(value))
        except ValueError:
            pass
    raise MetadataFieldError(f"metadata {key!r} is {value!r}; expected a UUID or its string form")
