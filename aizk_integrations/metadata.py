"""Reading a framework item's metadata into a candidate, with errors that name the field."""

from __future__ import annotations

from collections.abc import Mapping
from uuid import UUID

from pydantic_core import SchemaValidator, ValidationError, core_schema

from aizk_integrations.candidate import Candidate, Lane, scope_ids
from aizk_integrations.trusted import trusted

_LANES = {lane.value: lane for lane in Lane}
_ALLOWED_LANES = ", ".join(_LANES)
_UUID_TEXT = SchemaValidator(core_schema.uuid_schema())
"""Parses UUID text in pydantic-core, three times faster than `uuid.UUID(text)`."""


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
    # `dict` first: every framework hands over one, and the ABC check costs more than it.
    if type(metadata) is not dict and not isinstance(metadata, Mapping):
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
    return trusted(
        Candidate,
        {
            "lane": _LANES[lane],
            "line": text,
            "scopes": scopes,
            "artifact_id": _uuid(metadata, artifact_id_key),
            "artifact_content_id": _uuid(metadata, artifact_content_id_key),
        },
    )


def _uuid(metadata: Mapping[object, object], key: str) -> UUID | None:
    value = metadata.get(key)
    if value is None or isinstance(value, UUID):
        return value
    if isinstance(value, str):
        try:
            return _UUID_TEXT.validate_python(value)  # type: ignore[no-any-return]  # a UUID
        except ValidationError:
            pass
        # The standard library also takes forms pydantic-core does not (any hyphen placement,
        # repeated braces); accept exactly what `UUID(text)` accepts, as before.
        try:
            return UUID(value)
        except ValueError:
            pass
    raise MetadataFieldError(f"metadata {key!r} is {value!r}; expected a UUID or its string form")
