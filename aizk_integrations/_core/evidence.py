"""One kept item as a caller may see it: the one shape the walk, the block and the JSON read."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

from aizk_integrations._core.lanes import Provenance
from aizk_integrations._scopes.directory import Scope
from aizk_integrations._text import check_encodable
from aizk_integrations._uuids import RESOURCE_URI_PATTERN


class Evidence(BaseModel):
    """One kept item as a caller may see it: no lane, no score, no rank, no framework id."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    provenance: Provenance = Field(description="Public class of where the item came from.")
    text: str = Field(strict=True, description="The evidence text.")
    scopes: tuple[Scope, ...] = Field(
        default=(), description="The reader's scopes the item lives in, private first."
    )
    resource_uri: str | None = Field(
        default=None,
        pattern=RESOURCE_URI_PATTERN,
        description=(
            "aizk:// URI of the exact stored revision, when known: "
            "aizk://artifacts/<uuid>/contents/<uuid>, canonical UUIDs."
        ),
    )

    citation: dict[str, str] | None = Field(
        default=None,
        exclude_if=lambda citation: citation is None,
        description=(
            "When the block numbers its items for citing: where this item comes from, by the "
            "app's citation keys (e.g. {'source': 'plan.md', 'page': '3'}); None: not cited."
        ),
    )

    @field_validator("text")
    @classmethod
    def _encodable(cls, text: str) -> str:
        return check_encodable(text)

    @field_serializer("scopes")
    def _scope_names(self, scopes: tuple[Scope, ...]) -> list[str]:
        return [scope.name for scope in scopes]


def kept_item_metadata(evidence: Evidence) -> dict[str, Any]:
    """The metadata of a kept item an adapter returns on its own, for apps that cite sources.

    Scope names sit under `scope_names`, never under the `scopes` key the packer reads ids
    from, so an item fed back into a packer cannot pass its reader's names off as scope ids.
    """
    return {
        "provenance": evidence.provenance.value,
        "scope_names": [scope.name for scope in evidence.scopes],
        "resource_uri": evidence.resource_uri,
    }
