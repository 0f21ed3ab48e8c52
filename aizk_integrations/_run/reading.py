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

from aizk_integrations._core.evidence import Evidence
from aizk_integrations._core.lanes import PROVENANCE_OF_LANE, Lane
from aizk_integrations._core.packing import Found
from aizk_integrations._errors import ItemError, quoted
from aizk_integrations._scopes.directory import Scope, ScopeDirectory
from aizk_integrations._scopes.ids import PUBLIC, SeveralIdsInOneError, scope_ids
from aizk_integrations._text import without_surrogates
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
    UNREADABLE = "its scopes cannot be read"
    MALFORMED = "malformed"
    PACKED = "is an evidence block already: the retrieval packs twice"


BLOCK_KEY = "aizk_recall"
"""Metadata key of the one item a packer hands on, in both adapters: the block's public JSON."""


SEVERAL_IDS_IN_ONE = "holds several scope ids in one string, such as 'sam,org-team'"
"""What is wrong with scopes written as a list encoded in one string: said of no item in
particular, since whose item it is cannot be told."""


class Held(NamedTuple):
    """An item withheld before the walk: where it stood, why, and, for a malformed item the
    reader may read, what is wrong with it (never anything of an item the reader may not; of
    an unreadable one, only `SEVERAL_IDS_IN_ONE`, which quotes nothing of it)."""

    position: int
    reason: Withheld
    problem: str | None = None


class Access(NamedTuple):
    """Who is reading, what they may see, and what becomes of their malformed items.

    Fail closed: with no reader, only public items are shown (in the public scope, or naming no
    scope in a corpus the app declared public, `allow_unscoped`), unless the app opted in to
    everything (`allow_scoped_without_reader`) because every caller may see everything. Public
    is a scope, never an absence: an item whose scopes a pipeline stripped is shown to no one.
    """

    reader: ScopeDirectory | None
    allow_unscoped: bool
    allow_scoped_without_reader: bool
    raise_on_malformed: bool

    def decide(self, ids: frozenset[str]) -> tuple[Scope, ...] | Withheld:
        """The reader's scopes for an item in `ids`, or why the item is withheld."""
        if not ids:
            public = self.allow_unscoped or (
                self.reader is None and self.allow_scoped_without_reader
            )
            return () if public else Withheld.UNSCOPED
        if self.reader is None:
            # Nobody in particular is reading: only public items pass, unlabelled.
            if ids <= _PUBLIC_ONLY or self.allow_scoped_without_reader:
                return ()
            return Withheld.NO_READER
        if not self.reader.permits(ids):
            return Withheld.NOT_PERMITTED
        return self.reader.resolve(ids)


_PUBLIC_ONLY = frozenset((PUBLIC,))


def read(
    items: Iterable[Item],
    source: Source[Item],
    keys: MetadataKeys,
    access: Access,
    withheld: list[Held],
) -> Iterator[Found]:
    """The items the reader may see, as the walk pulls them; the others go to `withheld`.

    Authorization comes first: only an item's scopes are read before the reader's directory
    decides. An item whose scopes cannot be read at all may be anyone's, so it is withheld as
    unreadable and nothing else of it is looked at. A malformed item the reader may read is
    withheld with what is wrong (or, with `raise_on_malformed`, is the call's error): one bad
    record fails no request, and its owner is told.
    """
    decided: dict[frozenset[str], tuple[Scope, ...] | Withheld] = {}  # a recall's few scope sets
    for position, item in enumerate(items):
        metadata = source.metadata_of(item, position)
        if not isinstance(metadata, Mapping):
            kind = type(metadata).__name__
            _unreadable(access, position, f"metadata must be a mapping (dict), got {kind}")
            withheld.append(Held(position, Withheld.UNREADABLE))
            continue
        if BLOCK_KEY in metadata and keys.scopes not in metadata:
            withheld.append(Held(position, Withheld.PACKED))
            continue
        try:
            ids = _scope_ids(metadata.get(keys.scopes))
        except (TypeError, ValueError) as error:
            several = isinstance(error, SeveralIdsInOneError)
            problem = SEVERAL_IDS_IN_ONE if several else "cannot be read as scope ids"
            _unreadable(access, position, f"metadata {keys.scopes!r} {problem}")
            withheld.append(Held(position, Withheld.UNREADABLE, problem if several else None))
            continue
        if ids not in decided:
            decided[ids] = access.decide(ids)
        scopes = decided[ids]
        if isinstance(scopes, Withheld):
            withheld.append(Held(position, scopes))
            continue
        try:
            lane, evidence = _readable(item, position, metadata, scopes, source, keys)
        except ItemError as error:
            if access.raise_on_malformed:
                raise
            withheld.append(Held(position, Withheld.MALFORMED, error.problem))
            continue
        yield Found(position, lane, evidence)


def _scope_ids(value: object) -> frozenset[str]:
    return frozenset() if value is None else scope_ids(value)


def _unreadable(access: Access, position: int, problem: str) -> None:
    """With `raise_on_malformed`, an item whose scopes cannot be read is the call's error: named
    by its position alone and quoted in nothing, since whose it is cannot be told."""
    if access.raise_on_malformed:
        raise ItemError(
            position,
            f"{problem}, so whose item it is cannot be told and nothing of it is shown; write "
            "scopes as scope_metadata does",
            authorized=False,
        )


def _readable(
    item: Item,
    position: int,
    metadata: Mapping[str, object],
    scopes: tuple[Scope, ...],
    source: Source[Item],
    keys: MetadataKeys,
) -> tuple[Lane, Evidence]:
    """A readable item's lane and evidence, or an `ItemError` saying what is malformed."""
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
    return lane, evidence


def _problem(error: ValidationError) -> str:
    """What the text's validator said, without pydantic's frame around it."""
    [detail] = error.errors(include_url=False)
    return str(detail.get("ctx", {}).get("error", detail["msg"]))


def _citation(metadata: Mapping[str, object], keys: tuple[str, ...]) -> dict[str, str]:
    """What an item is cited by: the citation keys its metadata has, their values as text cut
    short (a label, not a copy of the metadata)."""
    return {key: _label(metadata[key]) for key in keys if metadata.get(key) is not None}


def _label(value: object) -> str:
    text = without_surrogates(value if isinstance(value, str) else str(value))
    return text if len(text) <= CITATION_LIMIT else text[:CITATION_LIMIT] + "…"


CITATION_LIMIT = 200
"""Characters of a citation value the block shows: enough for a file name, a URL, a title."""


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
