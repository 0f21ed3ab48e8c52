"""The public result: the only thing about a recall that crosses to a caller, and its JSON."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator

from aizk_integrations._core.candidate import Candidate, candidate_evidence
from aizk_integrations._core.evidence import Evidence
from aizk_integrations._core.rendering import render, shared_scopes
from aizk_integrations._scopes.directory import Scope, ScopeDirectory
from aizk_integrations._scopes.names import PRIVATE


class RecallResult(BaseModel):
    """The kept evidence in merit order, ready to render into a prompt."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    evidence: tuple[Evidence, ...] = Field(default=(), description="Kept evidence, best first.")

    @classmethod
    def from_candidates(
        cls, candidates: Iterable[Candidate], reader: ScopeDirectory | None = None
    ) -> RecallResult:
        """The boundary between retrieval internals and anything a caller sees.

        With a reader every candidate must be one its reader may see (withhold the others
        with `ScopeDirectory.permits` first); without one, nothing is labelled with scopes.
        """
        return cls(evidence=tuple(candidate_evidence(each, reader) for each in candidates))

    @model_validator(mode="before")
    @classmethod
    def _read_back(cls, data: object) -> object:
        """The public JSON read back: the evidence names its scopes, and `shared_scopes`
        describe them.

        The shared scopes are derived, not stored, so they must be exactly the scopes the
        evidence names (private aside); anything else is not this model's JSON.
        """
        if not isinstance(data, Mapping) or "shared_scopes" not in data:
            return data
        data = dict(data)
        described = {}
        for scope in data.pop("shared_scopes") or ():
            scope = Scope.model_validate(scope)
            described[scope.name] = scope
        evidence = []
        named: set[str] = set()
        for item in data.get("evidence") or ():
            if isinstance(item, Mapping) and isinstance(item.get("scopes"), list | tuple):
                names = [each for each in item["scopes"] if isinstance(each, str)]
                named.update(name for name in names if name != PRIVATE)
                scopes = [
                    (described.get(each) or Scope(name=each)) if isinstance(each, str) else each
                    for each in item["scopes"]
                ]
                item = {**item, "scopes": scopes}
            evidence.append(item)
        if set(described) - named:
            raise ValueError(
                f"shared_scopes names {sorted(set(described) - named)}, which no evidence "
                "item is in: shared_scopes are the scopes the evidence names"
            )
        data["evidence"] = evidence
        return data

    @computed_field  # type: ignore[prop-decorator]  # pydantic's documented idiom
    @property
    def shared_scopes(self) -> tuple[Scope, ...]:
        """Scopes the evidence came from, minus the reader's private one, by name.

        These head the block; `_rendering.shared_scopes` says why private is left out.
        """
        return shared_scopes(self.evidence)

    def to_markdown(self) -> str:
        """The block a prompt receives, or `""` when there is nothing to show."""
        return render(self.evidence)

    def _repr_markdown_(self) -> str:
        return self.to_markdown()
