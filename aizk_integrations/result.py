"""The public result: the only thing about a recall that crosses to a caller."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, computed_field, field_serializer

from aizk_integrations.candidate import Candidate, Lane
from aizk_integrations.rendering import render_rows
from aizk_integrations.scopes import PRIVATE, Scope, ScopeDirectory, scope_order
from aizk_integrations.trusted import trusted


class Provenance(StrEnum):
    """The three public classes the six internal lanes collapse onto."""

    SOURCE = "source"
    SESSION = "session"
    DERIVED = "derived"

    @property
    def label(self) -> str:
        """The bold label an evidence bullet opens with."""
        return _LABELS[self]

    @classmethod
    def of_lane(cls, lane: Lane) -> Provenance:
        """Where a lane lands in public: lane names themselves never cross."""
        return _PROVENANCE_OF_LANE[lane]


_LABELS = {
    Provenance.SOURCE: "Source excerpt",
    Provenance.SESSION: "Recent session memory",
    Provenance.DERIVED: "Derived memory",
}

_JSON_VALUE = {provenance: provenance.value for provenance in Provenance}
"""Plain strings for the JSON; an enum's `.value` is a slow descriptor on the hot path."""

_PROVENANCE_OF_LANE = {
    Lane.SOURCES: Provenance.SOURCE,
    Lane.WORKING_MEMORY: Provenance.SESSION,
    Lane.FACTS: Provenance.DERIVED,
    Lane.PROFILE: Provenance.DERIVED,
    Lane.COMMUNITIES: Provenance.DERIVED,
    Lane.OVERVIEW: Provenance.DERIVED,
}


class Evidence(BaseModel):
    """One kept row as a caller may see it: no lane, no score, no rank, no framework id."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    provenance: Provenance = Field(description="Public class of where the row came from.")
    text: str = Field(description="The evidence text.")
    scopes: tuple[Scope, ...] = Field(
        default=(), description="The reader's scopes the row lives in, private first."
    )
    resource_uri: str | None = Field(
        default=None, description="aizk:// URI of the exact stored revision, when known."
    )

    @field_serializer("scopes")
    def _scope_names(self, scopes: tuple[Scope, ...]) -> list[str]:
        return [scope.name for scope in scopes]

    def item_metadata(self) -> dict[str, Any]:
        """The metadata an adapter gives a kept item it returns on its own, for citations.

        Scope names sit under `scope_names`, never under the `scopes` key the packer reads ids
        from, so an item fed back into a packer cannot pass its reader's names off as scope ids.
        """
        return {
            "provenance": _JSON_VALUE[self.provenance],
            "scope_names": [scope.name for scope in self.scopes],
            "resource_uri": self.resource_uri,
        }

    def public_json(self) -> dict[str, Any]:
        """`model_dump(mode="json")`, built directly (see `public_json_of`)."""
        names = [scope.name for scope in self.scopes]
        return _evidence_json(self.provenance, self.text, names, self.resource_uri)


def _evidence_json(
    provenance: Provenance, text: str, scope_names: list[str], uri: str | None
) -> dict[str, Any]:
    """One evidence item's public JSON: the single place its shape is written."""
    return {
        "provenance": _JSON_VALUE[provenance],
        "text": text,
        "scopes": scope_names,
        "resource_uri": uri,
    }


class EvidenceRow(Protocol):
    """What packing and the result read of a row: a `Candidate`, or a row read from metadata."""

    @property
    def lane(self) -> Lane: ...
    @property
    def line(self) -> str: ...
    @property
    def scopes(self) -> frozenset[str]: ...
    @property
    def resource_uri(self) -> str | None: ...


KeptEvidence = tuple[Provenance, str, tuple[Scope, ...], str | None]
"""An `Evidence`'s fields as a plain tuple: what the block and the public JSON are made from.

The adapters render and serialise every kept item on every call, and need no model for it; a
`RecallResult` is built from the same rows only when a caller asks for one.
"""


def kept_evidence(
    rows: Iterable[EvidenceRow], directory: ScopeDirectory | None
) -> list[KeptEvidence]:
    """Rows already checked and authorized, with their provenance and the reader's scopes.

    The rows of one recall share a few scope sets, so each set is resolved once per call, and
    the items of one set share one scope tuple (which rendering and the JSON rely on).
    """
    resolved: dict[frozenset[str], tuple[Scope, ...]] = {}
    evidence: list[KeptEvidence] = []
    for row in rows:
        if directory is None:
            scopes: tuple[Scope, ...] = ()
        elif row.scopes in resolved:
            scopes = resolved[row.scopes]
        else:
            scopes = resolved[row.scopes] = directory.resolve(row.scopes)
        evidence.append((_PROVENANCE_OF_LANE[row.lane], row.line, scopes, row.resource_uri))
    return evidence


def shared_scopes_of(rows: Sequence[KeptEvidence]) -> tuple[Scope, ...]:
    """The scopes the rows came from, minus the reader's private one, one per name, by name.

    Private is dropped because the reader already knows their own memory; the header is there
    to say which organizations' memory is in the prompt.
    """
    # Rows share a few scope tuples (see `kept_evidence`), so each is looked at once. Where two
    # scopes share a name the last one wins, so everything is read from the end.
    latest_first = {id(row[2]): row[2] for row in reversed(rows)}
    by_name: dict[str, Scope] = {}
    for scopes in latest_first.values():
        for scope in reversed(scopes):
            if scope.name != PRIVATE:
                by_name.setdefault(scope.name, scope)
    return tuple(sorted(by_name.values(), key=scope_order))


def public_json_of(rows: Sequence[KeptEvidence], shared_scopes: Sequence[Scope]) -> dict[str, Any]:
    """`RecallResult.model_dump(mode="json")` of these rows, built directly.

    Both adapters attach this to every block they return; pydantic's generic serializer (with a
    per-item field serializer and a computed field) cost as much as rendering the block. A test
    pins the two to be equal for every result.
    """
    # The scope names of each shared scope tuple are listed once, and copied per item.
    names: dict[int, list[str]] = {}
    evidence = []
    for provenance, text, scopes, uri in rows:
        scope_names = names.get(id(scopes))
        if scope_names is None:
            scope_names = names[id(scopes)] = [scope.name for scope in scopes]
        evidence.append(_evidence_json(provenance, text, scope_names.copy(), uri))
    return {
        "evidence": evidence,
        "shared_scopes": [
            {"name": scope.name, "description": scope.description} for scope in shared_scopes
        ],
    }


class RecallResult(BaseModel):
    """The kept evidence in merit order, ready to render into a prompt."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    evidence: tuple[Evidence, ...] = Field(default=(), description="Kept evidence, best first.")

    @classmethod
    def from_candidates(
        cls, candidates: Iterable[Candidate], directory: ScopeDirectory | None = None
    ) -> RecallResult:
        """The boundary between retrieval internals and anything a caller sees."""
        return cls.from_rows(kept_evidence(candidates, directory))

    @classmethod
    def from_rows(cls, rows: Iterable[KeptEvidence]) -> RecallResult:
        """The result holding these rows, each validated when it was read."""
        evidence = [
            trusted(
                Evidence,
                {"provenance": provenance, "text": text, "scopes": scopes, "resource_uri": uri},
            )
            for provenance, text, scopes, uri in rows
        ]
        return trusted(cls, {"evidence": tuple(evidence)})

    def rows(self) -> list[KeptEvidence]:
        """The evidence as plain rows, the form the block and the JSON are made from."""
        return [
            (item.provenance, item.text, item.scopes, item.resource_uri) for item in self.evidence
        ]

    @computed_field  # type: ignore[prop-decorator]  # pydantic's documented idiom
    @property
    def shared_scopes(self) -> tuple[Scope, ...]:
        """Scopes the evidence came from, minus the reader's private one, by name.

        These head the block; `shared_scopes_of` says why private is left out.
        """
        return shared_scopes_of(self.rows())

    def public_json(self) -> dict[str, Any]:
        """`model_dump(mode="json")`, built directly (see `public_json_of`)."""
        rows = self.rows()
        return public_json_of(rows, shared_scopes_of(rows))

    def to_markdown(self) -> str:
        """The block a prompt receives, or `""` when there is nothing to show."""
        rows = self.rows()
        return render_rows(rows, shared_scopes_of(rows))

    def _repr_markdown_(self) -> str:
        return self.to_markdown()
