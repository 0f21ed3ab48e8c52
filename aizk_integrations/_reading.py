"""How framework items become evidence: read, authorized, labelled, one at a time.

A retrieval hands over far more items than a prompt keeps, and the walk reads them lazily, so an
item is read only when the walk reaches it.

Reading an item authorizes it first: only its scopes are read before the reader's directory
decides, so an item the reader may not see is withheld without its other fields ever being
validated, quoted or allowed to fail the call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Generic, NamedTuple, TypeVar
from uuid import UUID

from pydantic import ValidationError

from aizk_integrations._errors import ItemError, quoted
from aizk_integrations._evidence import Evidence
from aizk_integrations._lanes import PROVENANCE_OF_LANE, Lane
from aizk_integrations._packing import Found
from aizk_integrations._scope_ids import scope_ids
from aizk_integrations._scopes import Scope, ScopeDirectory
from aizk_integrations._uuids import canonical_uuid, resource_uri, uuid_text

Item = TypeVar("Item")


@dataclass(frozen=True)
class Source(Generic[Item]):
    """Where an adapter's items keep their metadata and text, and what errors call them.

    `metadata_of` and `text_of` may raise `ItemError` for an item that is not what the adapter
    expects; `name(items, position, authorized)` names an item in an error, showing its id only
    once it is known the reader may see it.
    """

    expected: str
    """What the items should be, for the error when they are not a sequence."""
    metadata_of: Callable[[object, int], object]
    text_of: Callable[[Item, int], object]
    name: Callable[[Sequence[Item], int, bool], str]
    score_of: Callable[[Item], object]
    """The ranking score the framework gives a readable item, if it gives one: how a call can
    tell that its items are not in merit order."""


class MetadataKeys(NamedTuple):
    """The metadata key each field is read from; every name is an adapter setting."""

    lane: str
    scopes: str
    artifact_id: str
    artifact_content_id: str
    citation: tuple[str, ...] | None
    """The keys an item is cited by, when the block numbers its items for citing; else None."""


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
        if self.reader is None:
            # Nobody in particular is reading: nothing is labelled with scope names.
            return Withheld.NO_READER if ids and not self.allow_scoped_without_reader else ()
        if not ids:
            return () if self.allow_unscoped else Withheld.UNSCOPED
        if not self.reader.permits(ids):
            return Withheld.NOT_PERMITTED
        return self.reader.resolve(ids)


def read(
    items: Iterable[Item],
    source: Source[Item],
    keys: MetadataKeys,
    access: Access,
    withheld: list[tuple[int, Withheld]],
) -> Iterator[Found]:
    """The items the reader may see, as the walk pulls them; the others go to `withheld`."""
    decided: dict[frozenset[str], tuple[Scope, ...] | Withheld] = {}  # a recall's few scope sets
    for position, item in enumerate(items):
        metadata = source.metadata_of(item, position)
        if not isinstance(metadata, Mapping):
            raise ItemError(
                position,
                f"metadata must be a mapping (dict), got {type(metadata).__name__}",
                authorized=False,
            )
        ids = _scope_ids(metadata.get(keys.scopes), keys.scopes, position)
        if ids not in decided:
            decided[ids] = access.decide(ids)
        scopes = decided[ids]
        if isinstance(scopes, Withheld):
            withheld.append((position, scopes))
            continue
        text = source.text_of(item, position)
        if not isinstance(text, str):
            raise ItemError(position, f"content must be text (str), got {type(text).__name__}")
        lane = _lane(metadata.get(keys.lane, Lane.SOURCES), keys.lane, position)
        uri = resource_uri(
            _uuid(metadata.get(keys.artifact_id), keys.artifact_id, position),
            _uuid(metadata.get(keys.artifact_content_id), keys.artifact_content_id, position),
        )
        citation = None if keys.citation is None else _citation(metadata, keys.citation)
        try:
            evidence = Evidence(
                provenance=PROVENANCE_OF_LANE[lane],
                text=text,
                scopes=scopes,
                resource_uri=uri,
                citation=citation,
            )
        except ValidationError as error:  # only the text can be wrong: the rest is built valid
            raise ItemError(position, f"content: {_problem(error)}") from None
        yield Found(position, lane, evidence)


def _problem(error: ValidationError) -> str:
    """What the text's validator said, without pydantic's frame around it."""
    [detail] = error.errors(include_url=False)
    return str(detail.get("ctx", {}).get("error", detail["msg"]))


def _citation(metadata: Mapping[str, object], keys: tuple[str, ...]) -> dict[str, str]:
    """What an item is cited by: the citation keys its metadata has, their values as text cut
    short (a label, not a copy of the metadata)."""
    return {key: _label(metadata[key]) for key in keys if metadata.get(key) is not None}


def _label(value: object) -> str:
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= CITATION_LIMIT else text[:CITATION_LIMIT] + "…"


CITATION_LIMIT = 200
"""Characters of a citation value the block shows: enough for a file name, a URL, a title."""


def _scope_ids(value: object, key: str, position: int) -> frozenset[str]:
    if value is None:
        return frozenset()
    try:
        return scope_ids(value)
    except (TypeError, ValueError) as error:
        raise ItemError(position, f"metadata {key!r}: {error}", authorized=False) from None


_LANES = {lane.value: lane for lane in Lane}
_ALLOWED_LANES = ", ".join(_LANES)


def _lane(value: object, key: str, position: int) -> Lane:
    lane = _LANES.get(value) if isinstance(value, str) else None
    if lane is None:
        raise ItemError(position, f"metadata {key!r} is {quoted(value)}; allowed: {_ALLOWED_LANES}")
    return lane


def _uuid(value: object, key: str, position: int) -> str | None:
    """Canonical UUID text from a `UUID` or any text `uuid.UUID` accepts; `None` as none."""
    if value is None:
        return None
    if isinstance(value, UUID):
        return canonical_uuid(value)
    text = uuid_text(value) if isinstance(value, str) else None
    if text is None:
        raise ItemError(
            position, f"metadata {key!r} is {quoted(value)}; expected a UUID or its string form"
        )
    return text
