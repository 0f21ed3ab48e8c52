"""Whose memory a reader may see, and what each scope is called for that reader."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, KeysView, Mapping
from typing import TYPE_CHECKING, Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

from aizk_integrations._errors import quoted
from aizk_integrations._scopes.ids import PUBLIC, scope_id, scopes_within
from aizk_integrations._scopes.names import PRIVATE, PUBLIC_NAME, check_scope_name
from aizk_integrations._text import check_encodable


class Scope(BaseModel):
    """A named access scope as one reader sees it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, description="What the reader calls this scope.")
    description: str = Field(
        default="", description="One line telling the reader whose it is; None or empty: none."
    )

    if TYPE_CHECKING:
        # What a type checker should accept: validation takes `description=None` as "none".
        def __init__(self, *, name: str, description: str | None = "") -> None: ...

    @field_validator("name", mode="before")
    @classmethod
    def _encodable_name(cls, name: object) -> object:
        # Before pydantic's own string check, whose message for a lone surrogate says nothing
        # of why it is refused.
        return check_encodable(name) if isinstance(name, str) else name

    @field_validator("name")
    @classmethod
    def _cannot_forge_a_label(cls, name: str) -> str:
        return check_scope_name(name)

    @field_validator("description", mode="before")
    @classmethod
    def _none_is_no_description(cls, description: object) -> object:
        return "" if description is None else description

    @field_validator("description")
    @classmethod
    def _encodable(cls, description: str) -> str:
        return check_encodable(description)


PUBLIC_SCOPE = Scope(name=PUBLIC_NAME, description="Every reader may read it.")
"""The public scope as every reader's directory holds it."""


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

    Scope names come from the caller, so the same item renders with different labels for
    different readers; the directory is also the authorization list, so it holds its own
    read-only copy of the mapping it was given: nothing done to that mapping later changes
    what the directory lets through.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    scopes: Mapping[str, Scope] = Field(description="Scope id -> the scope as this reader sees it.")

    @field_validator("scopes", mode="after")
    @classmethod
    def _own_read_only_copy(cls, scopes: Mapping[str, Scope]) -> Mapping[str, Scope]:
        private = [key for key, scope in scopes.items() if scope.name == PRIVATE]
        if len(private) > 1:
            raise ValueError(
                f"only the reader's own scope may be named {PRIVATE!r}, but {len(private)} are "
                "(an organization called that would pass for the reader's own memory)"
            )
        return ReadOnlyScopes(scopes)

    @field_serializer("scopes")
    def _plain_dict(self, scopes: Mapping[str, Scope]) -> dict[str, Any]:
        return dict(scopes)

    @classmethod
    def for_caller(
        cls,
        caller_id: str | UUID | int,
        organizations: Mapping[str, Scope] | Mapping[UUID, Scope] | Mapping[int, Scope],
    ) -> ScopeDirectory:
        """A reader's directory: their own id is `private`, plus one entry per organization,
        plus the public scope (`PUBLIC`), which every reader may read.

        An organization may not be called `private` (it would pass for the reader's own memory
        and be left out of the `## Scopes` header) or `public`, nor share the caller's id or
        the public scope's. Anything but a mapping to `Scope`s is a `TypeError` showing the
        mapping it should have been.
        """
        if not isinstance(organizations, Mapping):
            raise TypeError(
                "organizations must map each organization's scope id to a Scope, e.g. "
                "{'org-team': Scope(name='team')}, not a " + type(organizations).__name__
            )
        for key, scope in organizations.items():
            if not isinstance(scope, Scope):
                raise TypeError(_not_a_scope(key, scope))
        scopes = {scope_id(key): scope for key, scope in organizations.items()}
        caller = scope_id(caller_id)
        if caller in scopes:
            raise ValueError(
                f"the caller's id {quoted(caller)} is also one of the organizations: the "
                "caller's own scope is always `private`"
            )
        if PUBLIC in (caller, *scopes):
            raise ValueError(
                f"{PUBLIC!r} is the public scope's id, which every reader's directory holds: "
                "give the caller and each organization an id of their own"
            )
        for key, scope in scopes.items():
            if scope.name in (PRIVATE, PUBLIC_NAME):
                raise ValueError(
                    f"organization {quoted(key)} is named {quoted(scope.name)}: that name is "
                    f"the {'reader' if scope.name == PRIVATE else 'public'}'s own scope; give "
                    "the organization its own name"
                )
        scopes[caller] = Scope(name=PRIVATE)
        scopes[PUBLIC] = PUBLIC_SCOPE
        return cls(scopes=scopes)

    @property
    def private_scope_id(self) -> str | None:
        """The reader's own scope id: the key whose scope is named `private` (`for_caller`'s
        `caller_id`, as canonical text), or `None` for a directory built without one.

        What a tool writes the reader's own memory under, e.g. `scope_metadata(
        directory.private_scope_id)`, without searching the scopes for the name.
        """
        return next((key for key, scope in self.scopes.items() if scope.name == PRIVATE), None)

    def may_read(self, scopes: object) -> bool:
        """Whether this reader may read a stored item whose metadata names `scopes`: the
        packer's own rule, for retrieval (see `scopes_within`)."""
        return scopes_within(scopes, self.scopes.keys())

    def permits(self, scope_ids: frozenset[str], *, allow_unscoped: bool = False) -> bool:
        """Whether this reader may see an item in all of `scope_ids`.

        An item in two scopes is readable only by their intersection, so every one of its scopes
        must be the reader's. An item in no scope has no owner to vouch for it and is refused
        unless the caller opts in.
        """
        if not scope_ids:
            return allow_unscoped
        return scope_ids <= self.scopes.keys()

    def resolve(self, scope_ids: Iterable[str]) -> tuple[Scope, ...]:
        """The reader's scopes for these ids, private first, then by name, one per name."""
        try:
            # Sorted, so where two ids share a name the same one wins in every process.
            found = {self.scopes[each].name: self.scopes[each] for each in sorted(scope_ids)}
        except KeyError as error:
            raise ValueError(
                f"scope {quoted(error.args[0])} is not in this reader's directory; "
                "withhold the item (ScopeDirectory.permits) before building the result"
            ) from None
        return tuple(sorted(found.values(), key=scope_order))


def _not_a_scope(key: object, value: object) -> str:
    """What `for_caller` says of an organization given as something else than a `Scope`: the
    entry as it should be written, with the name it was given where that was one."""
    name = quoted(value) if isinstance(value, str) else "..."
    return (
        f"organization {quoted(key)} maps to {type(value).__name__}, not a Scope: write "
        f"{{{quoted(key)}: Scope(name={name})}}"
    )


def require_reader(value: object, where: str) -> ScopeDirectory:
    """`value` as a request's reader, or the one error every adapter gives for anything else.

    A request may switch readers but never switch authorization off, so `None`, a dict or a
    user id is refused rather than read as "no reader".
    """
    if not isinstance(value, ScopeDirectory):
        raise TypeError(
            f"{where} needs a ScopeDirectory (a request may switch readers but not switch "
            f"authorization off), not {type(value).__name__}"
        )
    return value
