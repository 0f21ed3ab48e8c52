"""One retrieved item as a caller hands it to `pack`: the public input model."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, field_validator

from aizk_integrations._core.evidence import Evidence
from aizk_integrations._core.lanes import PROVENANCE_OF_LANE, Lane, LaneName
from aizk_integrations._scopes.directory import ScopeDirectory
from aizk_integrations._scopes.ids import scope_ids
from aizk_integrations._text import check_encodable
from aizk_integrations._tokens import SEED_COUNTER
from aizk_integrations._uuids import canonical_uuid, resource_uri

ScopeIds = str | UUID | int | Collection[str | UUID | int]
"""What `Candidate(scopes=...)` takes: one id, or a list, tuple or set of ids."""


class Candidate(BaseModel):
    """A retrieved item in merit order, carrying what packing and rendering need."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    lane: Lane = Field(default=Lane.SOURCES, description="Retrieval lane; decides provenance.")
    line: str = Field(strict=True, description="The evidence text exactly as it will be shown.")
    scopes: frozenset[str] = Field(
        default=frozenset(),
        description="Ids of the access scopes the item lives in; readable by their intersection.",
    )
    artifact_id: UUID | None = Field(
        default=None, description="Stored artifact that grounded the item."
    )
    artifact_content_id: UUID | None = Field(
        default=None, description="Exact stored revision of that artifact."
    )

    if TYPE_CHECKING:
        # What a type checker should accept, spelled out: validation takes `scopes=["a", "b"]`,
        # `lane="facts"` and a UUID's text, while the fields keep their normalised types.
        def __init__(
            self,
            *,
            line: str,
            lane: Lane | LaneName = Lane.SOURCES,
            scopes: ScopeIds = frozenset(),
            artifact_id: UUID | str | None = None,
            artifact_content_id: UUID | str | None = None,
        ) -> None: ...

    @field_validator("line")
    @classmethod
    def _encodable(cls, line: str) -> str:
        return check_encodable(line)

    @field_validator("scopes", mode="before")
    @classmethod
    def _normalise_scopes(cls, value: object) -> frozenset[str]:
        # pydantic reports ValueError as a ValidationError but lets TypeError escape raw.
        try:
            return scope_ids(value)
        except TypeError as error:
            raise ValueError(str(error)) from None

    @property
    def token_count(self) -> int:
        """Tokens this item costs under the seed's heuristic, `ceil(len(line) / 4)`.

        Deliberately cheap: packing runs on every recall, so a character count stands in for a
        tokenizer. Pass a `token_counter` to `pack` when the estimate is not good enough.
        """
        return SEED_COUNTER(self.line)

    @property
    def resource_uri(self) -> str | None:
        """Where an MCP client can fetch the exact revision that grounded this item."""
        artifact, content = self.artifact_id, self.artifact_content_id
        if artifact is None or content is None:
            return None
        return resource_uri(canonical_uuid(artifact), canonical_uuid(content))


def candidate_evidence(candidate: Candidate, reader: ScopeDirectory | None) -> Evidence:
    """A candidate as kept evidence, labelled with the reader's scopes (none without one).

    Authorization is the caller's: with a reader, the candidate must be one its reader may
    see, and one that is not is an error rather than a silently unlabelled item.
    """
    return Evidence(
        provenance=PROVENANCE_OF_LANE[candidate.lane],
        text=candidate.line,
        scopes=() if reader is None else reader.resolve(candidate.scopes),
        resource_uri=candidate.resource_uri,
    )
