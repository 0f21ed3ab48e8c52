"""The public result: the only thing about a recall that crosses to a caller, and its JSON."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    computed_field,
    field_serializer,
    field_validator,
)

from aizk_integrations._candidate import Candidate, candidate_rows
from aizk_integrations._lanes import Provenance
from aizk_integrations._rendering import render, shared_scopes
from aizk_integrations._rows import RESOURCE_URI_PATTERN, Row, check_encodable
from aizk_integrations._scopes import Scope, ScopeDirectory


class Evidence(BaseModel):
    """One kept row as a caller may see it: no lane, no score, no rank, no framework id."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    provenance: Provenance = Field(description="Public class of where the row came from.")
    text: str = Field(description="The evidence text.")
    scopes: tuple[Scope, ...] = Field(
        default=(), description="The reader's scopes the row lives in, private first."
    )
    resource_uri: str | None = Field(
        default=None,
        pattern=RESOURCE_URI_PATTERN,
        description=(
            "aizk:// URI of the exact stored revision, when known: "
            "aizk://artifacts/<uuid>/contents/<uuid>, canonical UUIDs."
        ),
    )

    @field_validator("text")
    @classmethod
    def _encodable(cls, text: str) -> str:
        return check_encodable(text)

    @field_serializer("scopes")
    def _scope_names(self, scopes: tuple[Scope, ...]) -> list[str]:
        return [scope.name for scope in scopes]


class RecallResult(BaseModel):
    """The kept evidence in merit order, ready to render into a prompt."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    evidence: tuple[Evidence, ...] = Field(default=(), description="Kept evidence, best first.")

    @classmethod
    def from_candidates(
        cls, candidates: Iterable[Candidate], directory: ScopeDirectory | None = None
    ) -> RecallResult:
        """The boundary between retrieval internals and anything a caller sees.

        With a directory every candidate must be one its reader may see (withhold the others
        with `ScopeDirectory.permits` first); without one, nothing is labelled with scopes.
        """
        return cls.from_rows(candidate_rows(candidates, directory))

    @classmethod
    def from_rows(cls, rows: Iterable[Row]) -> RecallResult:
        """The result holding these rows, each already read, authorized and labelled."""
        return cls(
            evidence=tuple(
                Evidence(
                    provenance=row.provenance,
                    text=row.text,
                    scopes=row.scopes,
                    resource_uri=row.resource_uri,
                )
                for row in rows
            )
        )

    @computed_field  # type: ignore[prop-decorator]  # pydantic's documented idiom
    @property
    def shared_scopes(self) -> tuple[Scope, ...]:
        """Scopes the evidence came from, minus the reader's private one, by name.

        These head the block; `_rendering.shared_scopes` says why private is left out.
        """
        return shared_scopes(self.evidence)

    def to_markdown(self) -> str:
        """The block a prompt receives, or `""` when there is nothing to show."""
        return render(self.evidence, self.shared_scopes)

    def _repr_markdown_(self) -> str:
        return self.to_markdown()


def public_json(items: Sequence[Row | Evidence], shared: Sequence[Scope]) -> dict[str, Any]:
    """`RecallResult.model_dump(mode="json")` of these items, built directly.

    `shared` is `shared_scopes(items)`, which the caller usually needs as well.

    Both adapters attach this to every block they return, straight from the kept rows; building
    the models and running pydantic's serializer cost as much again as rendering the block. A
    test pins the two to be equal for every result.
    """
    names: dict[int, list[str]] = {}  # items share a few scope tuples: list each one's names once
    evidence = []
    for item in items:
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
            {"name": scope.name, "description": scope.description} for scope in shared
        ],
    }


_JSON_VALUE = {provenance: provenance.value for provenance in Provenance}
"""Plain strings for the JSON; an enum's `.value` is a slow descriptor on this hot path."""


def kept_item_metadata(item: Row | Evidence) -> dict[str, Any]:
    """The metadata of a kept item an adapter returns on its own, for apps that cite sources.

    Scope names sit under `scope_names`, never under the `scopes` key the packer reads ids
    from, so an item fed back into a packer cannot pass its reader's names off as scope ids.
    """
    return {
        "provenance": _JSON_VALUE[item.provenance],
        "scope_names": [scope.name for scope in item.scopes],
        "resource_uri": item.resource_uri,
    }
