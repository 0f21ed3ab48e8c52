"""Reading a framework item's metadata into a candidate, with errors that name the field."""

from __future__ import annotations

from collections.abc import Mapping
from uuid import UUID

from aizk_integrations.candidate import Candidate, Lane, scope_ids

_LANES = {lane.value: lane for lane in Lane}
_ALLOWED_LANES = ", ".join(_LANES)


class MetadataFieldError(ValueError):
    """A field of one item is malformed; the caller adds which item it was."""


def candidate_from_metadata(
    text: object,
    metadata: object,
    *,
    lane_key: str,
    scopes_key: str,
    artifact_id_key: str,
    artifact_content_id_key: str,
) -> Candidate:
    """Build a candidate from an item's text and metadata, refusing anything malformed.

    Absent keys take the design's defaults (lane `sources`, no scopes, no artifact). The
    metadata is only read, never changed.
    """
    if not isinstance(text, str):
        raise MetadataFieldError(f"content must be text (str), got {type(text).__name__}")
    if not isinstance(metadata, Mapping):
        raise MetadataFieldError(
            f"metadata must be a mapping (dict), got {type(metadata).__name__}"
        )
    lane = metadata.get(lane_key, Lane.SOURCES)
    if not isinstance(lane, str) or lane not in _LANES:
        raise MetadataFieldError(f"metadata {lane_key!r} is {lane!r}; allowed: {_ALLOWED_LANES}")
    raw_scopes = metadata.get(scopes_key)
    try:
        scopes = frozenset() if raw_scopes is None else scope_ids(raw_scopes)
    except TypeError as error:
        raise MetadataFieldError(f"metadata {scopes_key!r}: {error}") from None
    # Every field is checked above, so skipping pydantic's second pass loses nothing.
    return Candidate.model_construct(
        lane=_LANES[lane],
        line=text,
        scopes=scopes,
        artifact_id=_uuid(metadata, artifact_id_key),
        artifact_content_id=_uuid(metadata, artifact_content_id_key),
    )


def _uuid(metadata: Mapping[object, object], key: str) -> UUID | None:
    value = metadata.get(key)
    if value is None or isinstance(value, UUID):
        return value
    if isinstance(value, str):
        try:
            return UUID(value)
        except ValueError:
            pass
    raise MetadataFieldError(f"metadata {key!r} is {value!r}; expected a UUID or its string form")
