"""Whose memory a reader may see, and what each scope is called for that reader."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, field_validator

PRIVATE = "private"
"""The name a reader's own scope always renders as, whatever its id."""


class Scope(BaseModel):
    """A named access scope as one reader sees it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, description="What the reader calls this scope.")
    description: str = Field(default="", description="One line telling the reader whose it is.")

    @field_validator("name")
    @classmethod
    def _visible(cls, name: str) -> str:
        # A blank name would render as an empty code span, which markdown shows as stray ticks.
        if not name.strip():
            raise ValueError("a scope name must contain a visible character")
        return name


def scope_order(scope: Scope) -> tuple[bool, str]:
    """The reader's own scope first, then the others by name."""
    return (scope.name != PRIVATE, scope.name)


class ScopeDirectory(BaseModel):
    """One reader's scopes: the ids they may read, mapped to the names they know them by.

    Scope names come from the caller, so the same row renders with different labels for
    different readers; the directory is also the authorization list.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    scopes: dict[str, Scope] = Field(description="Scope id -> the scope as this reader sees it.")

    @classmethod
    def for_caller(
        cls, caller_id: str | UUID, organizations: Mapping[str, Scope] | Mapping[UUID, Scope]
    ) -> ScopeDirectory:
        """A reader's directory: their own id is `private`, plus one entry per organization."""
        scopes = {str(scope_id): scope for scope_id, scope in organizations.items()}
        scopes[str(caller_id)] = Scope(name=PRIVATE)
        return cls(scopes=scopes)

    def permits(self, scope_ids: frozenset[str], *, allow_unscoped: bool = False) -> bool:
        """Whether this reader may see a row in all of `scope_ids`.

        A row in two scopes is readable only by their intersection, so every one of its scopes
        must be the reader's. A row in no scope has no owner to vouch for it and is refused
        unless the caller opts in.
        """
        if not scope_ids:
            return allow_unscoped
        return scope_ids <= self.scopes.keys()

    def resolve(self, scope_ids: Iterable[str]) -> tuple[Scope, ...]:
        """The reader's scopes for these ids, private first, then by name, one per name."""
        try:
            found = {self.scopes[scope_id].name: self.scopes[scope_id] for scope_id in scope_ids}
        except KeyError as error:
            raise ValueError(
                f"scope {error.args[0]!r} is not in this reader's directory; "
                "withhold the row (ScopeDirectory.permits) before building the result"
            ) from None
        return tuple(sorted(found.values(), key=scope_order))
