"""The public result: the only thing about a recall that crosses to a caller."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, computed_field, field_serializer

from aizk_integrations.candidate import Candidate, Lane
from aizk_integrations.rendering import render_recall
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
        """`model_dump(mode="json")`, built directly (see `RecallResult.public_json`)."""
        return {
            "provenance": _JSON_VALUE[self.provenance],
            "text": self.text,
            "scopes": [scope.name for scope in self.scopes],
            "resource_uri": self.resource_uri,
        }


KeptRow = tuple[Lane, str, frozenset[str], str | None]
"""What the result needs of a kept row: lane, text, scope ids and resource URI."""


def build_result(rows: Iterable[KeptRow], directory: ScopeDirectory | None) -> RecallResult:
    """The public result for rows already checked and authorized.

    The rows of one recall share a few scope sets, so each set is resolved once per call.
    """
    resolved: dict[frozenset[str], tuple[Scope, ...]] = {}
    evidence = []
    for lane, text, scope_ids, uri in rows:
        if directory is None:
            scopes: tuple[Scope, ...] = ()
        elif scope_ids in resolved:
            scopes = resolved[scope_ids]
        else:
            scopes = resolved[scope_ids] = directory.resolve(scope_ids)
        # Every part was validated when the row and the directory were built.
        fields = {
            "provenance": _PROVENANCE_OF_LANE[lane],
            "text": text,
            "scopes": scopes,
            "resource_uri": uri,
        }
        evidence.append(trusted(Evidence, fields))
    return trusted(RecallResult, {"evidence": tuple(evidence)})


class RecallResult(BaseModel):
    """The kept evidence in merit order, ready to render into a prompt."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    evidence: tuple[Evidence, ...] = Field(default=(), description="Kept evidence, best first.")

    @classmethod
    def from_candidates(
        cls, candidates: Iterable[Candidate], directory: ScopeDirectory | None = None
    ) -> RecallResult:
        """The boundary between retrieval internals and anything a caller sees."""
        return build_result(
            ((c.lane, c.line, c.scopes, c.resource_uri) for c in candidates), directory
        )

    @computed_field  # type: ignore[prop-decorator]  # pydantic's documented idiom
    @property
    def shared_scopes(self) -> tuple[Scope, ...]:
        """Scopes the evidence came from, minus the reader's private one, by name.

        Private is dropped because the reader already knows their own memory; the header is
        there to say which organizations' memory is in the prompt.
        """
        # Items share a few scope tuples (see `build_result`), so each is looked at once. Where
        # two scopes share a name the last one wins, so everything is read from the end.
        latest_first = {id(item.scopes): item.scopes for item in reversed(self.evidence)}
        by_name: dict[str, Scope] = {}
        for scopes in latest_first.values():
            for scope in reversed(scopes):
                if scope.name != PRIVATE:
                    by_name.setdefault(scope.name, scope)
        return tuple(sorted(by_name.values(), key=scope_order))

    def public_json(self) -> dict[str, Any]:
        """`model_dump(mode="json")`, built directly.

        Both adapters attach this to every block they return; pydantic's generic serializer
        (with a per-item field serializer and a computed field) cost as much as rendering the
        block. A test pins the two to be equal for every result.
        """
        # The scope names of each shared scope tuple are listed once, and copied per item.
        names: dict[int, list[str]] = {}
        evidence = []
        for item in self.evidence:
            scope_names = names.get(id(item.scopes))
            if scope_names is None:
                scope_names = names[id(item.scopes)] = [scope.name for scope in item.scopes]
            evidence.append(
                {
                    "provenance": _JSON_VALUE[item.provenance],
                    "text": item.text,
                    "scopes": scope_names.copy(),
                    "resource_uri": item.resource_uri,
                }
            )
        return {
            "evidence": evidence,
            "shared_scopes": [
                {"name": scope.name, "description": scope.description}
                for scope in self.shared_scopes
            ],
        }

    def to_markdown(self) -> str:
        """The block a prompt receives, or `""` when there is nothing to show."""
        return render_recall(self)

    def _repr_markdown_(self) -> str:
        return self.to_markdown()
