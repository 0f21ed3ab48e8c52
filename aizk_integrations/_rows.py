"""The one row the walk reads, and how items become rows: read, authorized, labelled.

A retrieval hands over far more items than a prompt keeps, and the walk reads them lazily, so an
item is read only when the walk reaches it and it stays a small tuple: the public `Evidence`
models are built only for a caller who asks for them.

Reading an item authorizes it first: only its scopes are read before the reader's directory
decides, so an item the reader may not see is withheld without its other fields ever being
validated, quoted or allowed to fail the call.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from enum import StrEnum
from typing import Generic, NamedTuple, TypeVar
from uuid import UUID

from aizk_integrations._errors import ItemError, quoted
from aizk_integrations._lanes import PROVENANCE_OF_LANE, Lane, Provenance
from aizk_integrations._scopes import Scope, ScopeDirectory, scope_ids
from aizk_integrations._uuids import canonical_uuid, is_canonical, uuid_text

Item = TypeVar("Item")

_LANES = {lane.value: lane for lane in Lane}
_ALLOWED_LANES = ", ".join(_LANES)


class Row(NamedTuple):
    """One evidence item as the walk, the block and the public JSON read it.

    `scopes` are the reader's own `Scope`s for the item (private first, then by name), already
    authorized; `position` is where the item stood in what the caller passed, which is how
    errors and kept items find their way back to it.
    """

    position: int
    lane: Lane
    text: str
    scopes: tuple[Scope, ...]
    resource_uri: str | None

    @property
    def provenance(self) -> Provenance:
        """The public class of the row's lane."""
        return PROVENANCE_OF_LANE[self.lane]


RESOURCE_URI_PATTERN = (
    r"^aizk://artifacts/"
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/contents/"
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
)
"""The only shape a resource URI takes: what `resource_uri` writes."""


def resource_uri(artifact_id: str | None, artifact_content_id: str | None) -> str | None:
    """Where an MCP client fetches the exact stored revision: both ids, or no URI at all.

    The ids are canonical UUID text (see `_uuids`), so the URI is too.
    """
    if artifact_id is None or artifact_content_id is None:
        return None
    return f"aizk://artifacts/{artifact_id}/contents/{artifact_content_id}"


_SURROGATE = re.compile(r"[\ud800-\udfff]").search


def check_encodable(text: str) -> str:
    """Refuse text with a lone surrogate: no encoding can carry it, so whoever sends the prompt
    to a model would fail on it later, far from the item that held it."""
    if not text.isascii() and (found := _SURROGATE(text)):
        raise ValueError(
            f"text has a lone surrogate (U+{ord(found.group()):04X}) at character "
            f"{found.start()}, which no encoding can carry; clean the text first, e.g. "
            "text.encode('utf-8', 'replace').decode('utf-8')"
        )
    return text


class MetadataKeys(NamedTuple):
    """The metadata key each field is read from; every name is an adapter setting."""

    lane: str
    scopes: str
    artifact_id: str
    artifact_content_id: str


class Withheld(StrEnum):
    """Why an item was left out before the walk, as the cut table and the logs say it."""

    NO_READER = "names scopes, and the call has no reader"
    UNSCOPED = "names no scope"
    NOT_PERMITTED = "names a scope the reader may not see"


class Access(NamedTuple):
    """Who is reading, and what they may see.

    Fail closed: with no reader, an item that names scopes is shown to nobody, unless the app
    opted in (`allow_scoped_without_reader`) because every caller may see everything.
    """

    reader: ScopeDirectory | None
    allow_unscoped: bool
    allow_scoped_without_reader: bool

    def decide(self, ids: frozenset[str]) -> tuple[Scope, ...] | Withheld:
        """The reader's scopes for an item in `ids`, or why the item is withheld."""
        reader = self.reader
        if reader is None:
            # Nobody in particular is reading: nothing is labelled with scope names.
            return Withheld.NO_READER if ids and not self.allow_scoped_without_reader else ()
        if not ids:
            return () if self.allow_unscoped else Withheld.UNSCOPED
        if not reader.permits(ids):
            return Withheld.NOT_PERMITTED
        return reader.resolve(ids)


class Reading(Generic[Item]):
    """Framework items read into rows as the walk pulls them, the withheld ones recorded.

    `metadata_of` and `text_of` say where an item keeps its metadata and its text; either may
    raise `ItemError` for an item that is not what the adapter expects.
    """

    def __init__(
        self,
        items: Iterable[Item],
        metadata_of: Callable[[Item, int], object],
        text_of: Callable[[Item, int], object],
        keys: MetadataKeys,
        access: Access,
    ) -> None:
        self._items = items
        self._metadata_of = metadata_of
        self._text_of = text_of
        self._keys = keys
        self._access = access
        self.withheld: list[tuple[int, Withheld]] = []
        """Position and reason of each item read so far that the reader may not see."""

    def __iter__(self) -> Iterator[Row]:
        lane_key, scopes_key, artifact_key, content_key = self._keys
        metadata_of, text_of, access = self._metadata_of, self._text_of, self._access
        # The items of one recall share a few scope sets: each is authorized and named once.
        decided: dict[frozenset[str], tuple[Scope, ...] | Withheld] = {}
        withheld = self.withheld
        for position, item in enumerate(self._items):
            metadata = metadata_of(item, position)
            # `dict` first: every framework hands over one, and the ABC check costs more.
            if type(metadata) is not dict and not isinstance(metadata, Mapping):
                raise ItemError(
                    position,
                    f"metadata must be a mapping (dict), got {type(metadata).__name__}",
                    authorized=False,
                )
            ids = _scope_ids(metadata.get(scopes_key), scopes_key, position)
            scopes = decided.get(ids)
            if scopes is None:
                scopes = decided[ids] = access.decide(ids)
            if isinstance(scopes, Withheld):
                withheld.append((position, scopes))
                continue
            text = text_of(item, position)
            if not isinstance(text, str):
                raise ItemError(position, f"content must be text (str), got {type(text).__name__}")
            if not text.isascii():
                try:
                    check_encodable(text)
                except ValueError as error:
                    raise ItemError(position, f"content: {error}") from None
            # The usual values (a lane's name, canonical UUID text) are taken as they are; the
            # helpers check everything else and name what is wrong.
            raw_lane = metadata.get(lane_key, "sources")
            lane = _LANES.get(raw_lane) if type(raw_lane) is str else None
            if lane is None:
                lane = _lane(raw_lane, lane_key, position)
            artifact = metadata.get(artifact_key)
            if artifact is not None and not (type(artifact) is str and is_canonical(artifact)):
                artifact = _uuid_text(artifact, artifact_key, position)
            content = metadata.get(content_key)
            if content is not None and not (type(content) is str and is_canonical(content)):
                content = _uuid_text(content, content_key, position)
            yield Row(position, lane, text, scopes, resource_uri(artifact, content))


def _scope_ids(value: object, key: str, position: int) -> frozenset[str]:
    if value is None:
        return frozenset()
    try:
        return scope_ids(value)
    except TypeError as error:
        raise ItemError(position, f"metadata {key!r}: {error}", authorized=False) from None


def _lane(value: object, key: str, position: int) -> Lane:
    lane = _LANES.get(value) if isinstance(value, str) else None
    if lane is None:
        raise ItemError(position, f"metadata {key!r} is {quoted(value)}; allowed: {_ALLOWED_LANES}")
    return lane


def _uuid_text(value: object, key: str, position: int) -> str:
    """Canonical UUID text from a `UUID` or any text `uuid.UUID` accepts."""
    if isinstance(value, UUID):
        return canonical_uuid(value)
    text = uuid_text(value) if isinstance(value, str) else None
    if text is None:
        raise ItemError(
            position, f"metadata {key!r} is {quoted(value)}; expected a UUID or its string form"
        )
    return text
