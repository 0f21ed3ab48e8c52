"""Whose memory a reader may see, what each scope is called for that reader, and scope ids."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, KeysView, Mapping
from typing import Any, cast
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

from aizk_integrations._errors import quoted

PRIVATE = "private"
"""The name a reader's own scope always renders as, whatever its id."""

_COLLECTIONS = frozenset({list, tuple, set, frozenset})


def scope_ids(value: object) -> frozenset[str]:
    """Normalise the ways a caller may name scopes into one set of string ids.

    A bare string is one id rather than a collection of characters, and UUIDs become their
    canonical string so that a directory keyed by `UUID` and metadata holding strings agree.
    """
    if type(value) in _COLLECTIONS:
        # The usual case, plain non-empty strings, costs one set and one look at each id.
        try:
            ids = frozenset(cast("Iterable[object]", value))
        except TypeError:  # an unhashable id: the general path below says which
            ids = frozenset((None,))
        for each in ids:
            if type(each) is not str or not each:
                break
        else:
            return cast("frozenset[str]", ids)  # every id was just checked to be a str
    if isinstance(value, str | UUID):
        return frozenset((scope_id(value),))
    if isinstance(value, list | tuple | set | frozenset):
        return frozenset([scope_id(item) for item in value])
    raise TypeError(
        f"scopes must be a scope id (str or UUID) or a list, tuple or set of them, "
        f"not {type(value).__name__}"
    )


def scope_id(value: object) -> str:
    """One scope id as the text every directory and row agree on."""
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, str) and value:
        return value
    raise TypeError(f"each scope id must be a non-empty str or a UUID, not {quoted(value)}")


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


class ReadOnlyScopes(Mapping[str, Scope]):
    """A directory's own copy of its scopes: readable like a dict, changeable by nobody.

    Not a `MappingProxyType`, because a directory must pickle and deep-copy with the adapter
    that holds it.
    """

    __slots__ = ("_scopes",)

    def __init__(self, scopes: Mapping[str, Scope]) -> None:
        self._scopes = {scope_id(key): scope for key, scope in scopes.items()}

    def __getitem__(self, key: str) -> Scope:
        return self._scopes[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._scopes)

    def __len__(self) -> int:
        return len(self._scopes)

    def keys(self) -> KeysView[str]:
        return self._scopes.keys()  # a live view, but only of this private dict

    def __repr__(self) -> str:
        return repr(self._scopes)

    def __reduce__(self) -> tuple[type[ReadOnlyScopes], tuple[dict[str, Scope]]]:
        return ReadOnlyScopes, (self._scopes,)


class ScopeDirectory(BaseModel):
    """One reader's scopes: the ids they may read, mapped to the names they know them by.

    Scope names come from the caller, so the same row renders with different labels for
    different readers; the directory is also the authorization list, so it holds its own
    read-only copy of the mapping it was given: nothing done to that mapping later changes
    what the directory lets through.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    scopes: Mapping[str, Scope] = Field(description="Scope id -> the scope as this reader sees it.")

    @field_validator("scopes", mode="after")
    @classmethod
    def _own_read_only_copy(cls, scopes: Mapping[str, Scope]) -> Mapping[str, Scope]:
        return ReadOnlyScopes(scopes)

    @field_serializer("scopes")
    def _plain_dict(self, scopes: Mapping[str, Scope]) -> dict[str, Any]:
        return dict(scopes)

    @classmethod
    def for_caller(
        cls, caller_id: str | UUID, organizations: Mapping[str, Scope] | Mapping[UUID, Scope]
    ) -> ScopeDirectory:
        """A reader's directory: their own id is `private`, plus one entry per organization."""
        scopes = {scope_id(key): scope for key, scope in organizations.items()}
        scopes[scope_id(caller_id)] = Scope(name=PRIVATE)
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
