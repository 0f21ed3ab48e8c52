"""Whose memory a reader may see, what each scope is called for that reader, and scope ids."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator, KeysView, Mapping, Set
from functools import cache
from itertools import product
from typing import TYPE_CHECKING, Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

from aizk_integrations._confusables import default_ignorable, skeleton
from aizk_integrations._errors import quoted
from aizk_integrations._text import check_encodable
from aizk_integrations._uuids import canonical_uuid, uuid_text

PRIVATE = "private"
"""The name a reader's own scope always renders as, whatever its id."""

INTERSECTION = " ∩ "
"""How an item's scope names are joined: it is readable only by their intersection."""


def scope_ids(value: object) -> frozenset[str]:
    """Normalise the ways a caller may name scopes into one set of string ids.

    A bare string is one id rather than a collection of characters, and UUIDs and database ids
    (ints) become their canonical text, so that a directory keyed by `UUID` or `int` and
    metadata holding strings agree.
    """
    if isinstance(value, str | UUID | int) and not isinstance(value, bool):
        return frozenset((scope_id(value),))
    if isinstance(value, list | tuple | set | frozenset):
        return frozenset([scope_id(each) for each in value])
    raise TypeError(
        f"scopes must be a scope id (str, UUID or int) or a list, tuple or set of them, "
        f"not {type(value).__name__}"
    )


def scope_id(value: object) -> str:
    """One scope id as the text every directory and item agree on: a UUID, in any spelling, as
    its canonical text; an int (a database id) as its decimal text; any other non-empty string
    as it is, unless it looks like several ids encoded in one string.

    A store or a pipeline that cannot keep a list (`filter_complex_metadata`, flat metadata)
    tempts people to write `"sam,org-team"`; read as one id, it would silently be a scope
    nobody is in, so it is refused with the way out.
    """
    if isinstance(value, UUID):
        return canonical_uuid(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value:
        raise TypeError(
            f"each scope id must be a non-empty str, a UUID or an int, not {quoted(value)}"
        )
    canonical = uuid_text(value)
    if canonical is not None:
        return canonical
    if _ENCODED_LIST(value):
        raise ValueError(
            f"scope id {quoted(value)} looks like several ids encoded in one string; store the "
            "ids as a list (aizk_integrations.scope_metadata writes them in a form every "
            "supported store keeps)"
        )
    return value


_ENCODED_LIST = re.compile(r"[,;|\n]|^\s*[\[({]").search
"""What a list written into one string looks like: separators, or an opening bracket."""


def scope_metadata(scopes: object, *, key: str = "scopes") -> dict[str, list[str]]:
    """The metadata that puts a stored item in `scopes`, in the one form every supported store
    keeps and can filter on: `{key: [sorted canonical ids]}`.

    A list survives the metadata round trip of LangChain's `InMemoryVectorStore`, Chroma,
    Qdrant and FAISS and of LlamaIndex's `SimpleVectorStore`, Qdrant, FAISS and Chroma (with
    the vector store's `flat_metadata = False`); sorted, two items in the same scopes carry the
    same value, so de-duplicating retrievers treat them alike. An item must be in at least one
    scope: an unscoped item has no owner to vouch for it.
    """
    ids = sorted(scope_ids(scopes))
    if not ids:
        raise ValueError("an item must be in at least one scope; scope_metadata got none")
    return {key: ids}


def check_scope_name(name: str) -> str:
    """Refuse a name that could forge an item's label or pass for another name.

    The block labels an item with its scope names joined by " ∩ " in one code span, so a name
    holding the separator, or a character that looks like it, would pass for two scopes; a name
    that reads as `private` but is not exactly it would pass for the reader's own memory. What
    looks alike is Unicode's rule, not a list of ours: the confusable skeletons of UTS #39
    (`_confusables`) of the name, and of it in NFKC, so full-width letters read as the letters
    they show, held to `private` in any mix of cases (the label `Private` reads as it too). A
    name with nothing visible would render as stray ticks, or as a blank that looks like another
    name; control and format characters (bidi overrides, zero-width joiners) anywhere, and
    spaces or invisible characters at an edge, can make a name look like another.
    """
    if INTERSECTION.strip() in name:
        raise ValueError(
            f"a scope name must not contain {INTERSECTION.strip()!r}, which the block uses to "
            f"join the scopes of one item: {quoted(name)}"
        )
    if name != PRIVATE and not _looks_of_private().isdisjoint(_looks(name)):
        raise ValueError(
            f"a scope name that reads as {PRIVATE!r} is the reader's own scope: only that one "
            f"may look like it; give the organization its own name: {quoted(name)}"
        )
    separator = skeleton(INTERSECTION.strip())
    if any(separator in look for look in _looks(name)):
        look_alike = next(char for char in name if any(separator in look for look in _looks(char)))
        raise ValueError(
            f"a scope name must not contain {look_alike!r} (U+{ord(look_alike):04X}), which "
            f"reads as {INTERSECTION.strip()!r}, the join of the scopes of one item: "
            f"{quoted(name)}"
        )
    hidden = [char for char in name if unicodedata.category(char) in _HIDDEN and not char.isspace()]
    if hidden:
        raise ValueError(
            f"a scope name must not contain control, format or surrogate characters "
            f"(such as U+{ord(hidden[0]):04X}), which can make it look like another name: "
            f"{quoted(name)}"
        )
    if not any(_visible(char) for char in name):
        raise ValueError(
            f"a scope name must contain a visible character, not only spaces or blank "
            f"fillers: {quoted(name)}"
        )
    if name != name.strip():
        raise ValueError(
            "a scope name must not start or end with spaces, which do not show and would "
            f"make it look like another name: {quoted(name)}"
        )
    edge = next((char for char in (name[0], name[-1]) if _blank(char)), None)
    if edge is not None:
        raise ValueError(
            f"a scope name must not start or end with an invisible or blank character (such "
            f"as U+{ord(edge):04X}), which would make it look like another name: {quoted(name)}"
        )
    return name


def _looks(name: str) -> tuple[str, str]:
    """What a name looks like: the UTS #39 skeleton of it, and of its NFKC form. Unicode's
    data leaves full-width and other compatibility letters to NFKC (U+FF52 is the `r` it shows
    there), and NFKC takes some look-alikes apart (the ogonek U+02DB, which looks like `i`)."""
    return skeleton(name), skeleton(unicodedata.normalize("NFKC", name))


@cache
def _looks_of_private() -> frozenset[str]:
    """What `private` looks like in every mix of capitals and small letters (`Private` reads as
    the reader's own scope too). Folding the case of a name instead would miss some: `I` looks
    like `l`, and a Cherokee small letter folds to a capital that looks like no Latin one."""
    spellings = product(*[(letter, letter.upper()) for letter in PRIVATE])
    return frozenset(skeleton("".join(spelling)) for spelling in spellings)


_HIDDEN = frozenset({"Cc", "Cf"})
"""Control and format characters; a control that is a space or a line break is folded like one
instead. (Lone surrogates never get this far: pydantic refuses them in a constrained string.)"""
_BLANK_SYMBOLS = frozenset("\u2800")
"""BRAILLE PATTERN BLANK: a symbol that renders as nothing, which Unicode does not call
ignorable (the Hangul and Khmer fillers it does, `_confusables.default_ignorable`)."""


def _blank(char: str) -> bool:
    return char.isspace() or default_ignorable(char) or char in _BLANK_SYMBOLS


def _visible(char: str) -> bool:
    return unicodedata.category(char)[0] in "LNPS" and not _blank(char)


def scopes_within(scopes: object, reader: Set[str]) -> bool:
    """Whether an item whose metadata names `scopes` is readable by a reader of scope ids
    `reader`: it names at least one scope, and every one of them is the reader's.

    Retrieval uses this to re-check what a store returned, so it never fails: scopes that
    cannot be read as ids are not readable (the packer, reading the same item, says why).
    """
    if scopes is None:
        return False
    try:
        ids = scope_ids(scopes)
    except (TypeError, ValueError):
        return False
    return bool(ids) and ids <= reader


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
        """A reader's directory: their own id is `private`, plus one entry per organization.

        An organization may not be called `private` (it would pass for the reader's own memory
        and be left out of the `## Scopes` header), nor share the caller's id.
        """
        scopes = {scope_id(key): scope for key, scope in organizations.items()}
        caller = scope_id(caller_id)
        if caller in scopes:
            raise ValueError(
                f"the caller's id {quoted(caller)} is also one of the organizations: the "
                "caller's own scope is always `private`"
            )
        for key, scope in scopes.items():
            if scope.name == PRIVATE:
                raise ValueError(
                    f"organization {quoted(key)} is named {quoted(scope.name)}: that name is "
                    "the reader's own scope; give the organization its own name"
                )
        scopes[caller] = Scope(name=PRIVATE)
        return cls(scopes=scopes)

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
