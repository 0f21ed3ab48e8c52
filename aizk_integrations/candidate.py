"""One evidence row as the packer sees it, before anything public is derived from it."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import cast
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import SchemaSerializer, core_schema

from aizk_integrations.tokens import estimate_tokens

_UUID_TEXT = SchemaSerializer(core_schema.uuid_schema())
"""Writes a UUID's canonical text in pydantic-core, faster than `str(uuid)` in Python."""


class Lane(StrEnum):
    """The retrieval lane a row came from.

    Lanes are an internal detail: they decide the public provenance of a row and never appear in
    the rendered block or the public JSON.
    """

    SOURCES = "sources"
    WORKING_MEMORY = "working_memory"
    FACTS = "facts"
    PROFILE = "profile"
    COMMUNITIES = "communities"
    OVERVIEW = "overview"


_COLLECTIONS = frozenset({list, tuple, set, frozenset})


def scope_ids(value: object) -> frozenset[str]:
    """Normalise the ways a caller may name scopes into one set of string ids.

    A bare string is one id rather than a collection of characters, and UUIDs become their
    canonical string so that a directory keyed by `UUID` and metadata holding strings agree.
    """
    if type(value) in _COLLECTIONS:
        # The usual case, plain non-empty strings, costs one set and one look at each id.
        try:
            ids: frozenset[object] | None = frozenset(cast("Iterable[object]", value))
        except TypeError:  # an unhashable id: the general path below says which
            ids = None
        if ids is not None and all(type(scope_id) is str and scope_id for scope_id in ids):
            return cast("frozenset[str]", ids)  # every id was just checked to be a str
    if isinstance(value, str | UUID):
        return frozenset((_scope_id(value),))
    if isinstance(value, list | tuple | set | frozenset):
        return frozenset([_scope_id(item) for item in value])
    raise TypeError(
        f"scopes must be a scope id (str or UUID) or a list, tuple or set of them, "
        f"not {type(value).__name__}"
    )


def _scope_id(value: object) -> str:
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, str) and value:
        return value
    raise TypeError(f"each scope id must be a non-empty str or a UUID, not {value!r}")


class Candidate(BaseModel):
    """A retrieved row in merit order, carrying what packing and rendering need."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    lane: Lane = Field(default=Lane.SOURCES, description="Retrieval lane; decides provenance.")
    line: str = Field(strict=True, description="The evidence text exactly as it will be shown.")
    scopes: frozenset[str] = Field(
        default=frozenset(),
        description="Ids of the access scopes the row lives in; readable by their intersection.",
    )
    artifact_id: UUID | None = Field(
        default=None, description="Stored artifact that grounded the row."
    )
    artifact_content_id: UUID | None = Field(
        default=None, description="Exact stored revision of that artifact."
    )

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
        """Tokens this row costs under the seed's heuristic.

        Deliberately cheap: packing runs on every recall, so a character count stands in for a
        tokenizer. Pass a `token_counter` to `pack` when the estimate is not good enough.
        """
        return estimate_tokens(self.line)

    @property
    def resource_uri(self) -> str | None:
        """Where an MCP client can fetch the exact revision that grounded this row."""
        if self.artifact_id is None or self.artifact_content_id is None:
            return None
        artifact = _UUID_TEXT.to_python(self.artifact_id, mode="json")
        content = _UUID_TEXT.to_python(self.artifact_content_id, mode="json")
        return f"aizk://artifacts/{artifact}/contents/{content}"
