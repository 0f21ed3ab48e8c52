"""Scope ids: the one text every directory, item and store filter agrees a scope is called.

An id reaches the library in many forms: a directory keyed by `UUID` or by a database's int, an
item's metadata holding a bare string, a list, an int, a UUID in capitals. The packer compares
ids as one canonical text (`scope_id`). A store's filter compares stored values, not ids, so
scoped retrieval asks a store for every value it may hold for the reader's ids (`spellings`):
whatever the packer would show a reader, the store's filter lets through. The forms accepted
are exactly the forms a filter can be asked for, so the two can never disagree.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Set
from dataclasses import dataclass
from functools import lru_cache
from uuid import UUID

from aizk_integrations._errors import quoted
from aizk_integrations._tokens import is_int
from aizk_integrations._uuids import CANONICAL_UUID, canonical_uuid

PUBLIC = "aizk:public"
"""The scope id of evidence every reader may read. Public is a scope written at ingestion
(`scope_metadata(PUBLIC)`), never the absence of one: a step that strips an item's scopes then
makes it shown to nobody rather than to everybody. Every `ScopeDirectory.for_caller` reader
holds it."""

LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
"""Every character `str.splitlines` ends a line at: the line breaks the block treats as one."""


def scope_ids(value: object) -> frozenset[str]:
    """Normalise the ways a caller may name scopes into one set of string ids.

    A bare string is one id rather than a collection of characters, and UUIDs and database ids
    (ints) become their canonical text, so that a directory keyed by `UUID` or `int` and
    metadata holding strings agree.
    """
    if isinstance(value, str | UUID) or is_int(value):
        return frozenset((scope_id(value),))
    if isinstance(value, list | tuple | set | frozenset):
        return frozenset([scope_id(each) for each in value])
    raise TypeError(
        f"scopes must be a scope id (str, UUID or int) or a list, tuple or set of them, "
        f"not {type(value).__name__}"
    )


def scope_id(value: object) -> str:
    """One scope id as the text every directory and item agree on: a UUID as its canonical
    text; an int (a database id) as its decimal text; any other non-empty string as it is.

    A UUID's text is read as a UUID in the spellings code writes it in (`str(uuid)`,
    `uuid.hex`, `uuid.urn`, in braces, each all in small letters or all in capitals): those are
    the spellings a store filter is asked for (`uuid_spellings`), so the packer and the store
    agree on every item. Any other text is an id as it stands, so a mixed-case UUID is a scope
    of its own, found and shown only under that spelling. A store or a pipeline that cannot
    keep a list tempts people to write `"sam,org-team"`; read as one id, it would silently be a
    scope nobody is in, so it is refused with the way out, as is any line break.
    """
    if isinstance(value, UUID):
        return canonical_uuid(value)
    if is_int(value):
        # Read as its decimal text is read, so the canonical text is a fixed point: an int of
        # 32 digits spells a UUID's hex, and the directory, which keeps text, reads it so too.
        return scope_id(str(value))
    if not isinstance(value, str) or not value:
        raise TypeError(
            f"each scope id must be a non-empty str, a UUID or an int, not {quoted(value)}"
        )
    return _text_id(value)


@lru_cache(maxsize=4096)  # a reader's few scope ids name every item of every call
def _text_id(text: str) -> str:
    """A scope id written as text, read as `scope_id` says."""
    if _UUID_SPELLING(text):
        return canonical_uuid(UUID(text))
    refused = _REFUSED(text)
    if refused is not None:
        found = refused.group()
        if found in LINE_BREAKS:
            raise ValueError(
                f"scope id {quoted(text)} holds a line break (U+{ord(found):04X}); an id is "
                "one line: store several ids as a list (aizk_integrations.scope_metadata)"
            )
        raise SeveralIdsInOneError(
            f"scope id {quoted(text)} looks like several ids encoded in one string; store the "
            "ids as a list (aizk_integrations.scope_metadata writes them in a form every "
            "supported store keeps)"
        )
    return text


class SeveralIdsInOneError(ValueError):
    """A scope id that is a list written into one string (`"sam,org-team"`): said apart from
    other unreadable scopes, since its fix is known (store a list)."""


_REFUSED = re.compile(rf"[{LINE_BREAKS},;|]|^\s*[\[({{]").search
"""A line break anywhere, or what a list written into one string looks like: separators, or an
opening bracket."""


def _spelled(hyphenated: str, hexadecimal: str) -> str:
    return rf"{hyphenated}|{hexadecimal}|urn:uuid:{hyphenated}|\{{{hyphenated}\}}"


_SMALL = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
UUID_SPELLING = f"{_spelled(_SMALL, '[0-9a-f]{32}')}|{_spelled(_SMALL.upper(), '[0-9A-F]{32}')}"
"""The spellings of a UUID's text that are read as one, each of `uuid_spellings`', as a regular
expression that Python and Postgres read alike (the database reads a stored id by it too)."""
_UUID_SPELLING = re.compile(UUID_SPELLING).fullmatch

_CANONICAL_UUID = re.compile(CANONICAL_UUID).fullmatch


def uuid_spellings(canonical: str) -> tuple[str, ...]:
    """The texts a UUID's id is accepted in, from its canonical text: hyphenated (`str`), bare
    hex (`.hex`), as a URN (`.urn`) and in braces (the registry form), each in small letters
    and in capitals."""
    spellings = []
    for case in (canonical, canonical.upper()):
        spellings += [case, case.replace("-", ""), f"urn:uuid:{case}", f"{{{case}}}"]
    return tuple(spellings)


_STORED_INT = re.compile(r"0|-?[1-9][0-9]{0,18}").fullmatch
_INT64 = range(-(2**63), 2**63)


def stored_int(scope_id: str) -> int | None:
    """The int a store may hold for a scope id that is a database id (`7` for `"7"`), or `None`
    when no stored int reads as it: only an int's own decimal text does, within the 64 bits
    stores keep."""
    if not _STORED_INT(scope_id):
        return None
    number = int(scope_id)
    return number if number in _INT64 else None


@dataclass(frozen=True)
class Spellings:
    """Every value a store may hold for a set of scope ids, texts and numbers apart: a store's
    filter matches stored values by type (`7` is not `"7"` to Chroma or Qdrant), and most cannot
    compare a text with a number in one condition."""

    texts: tuple[str, ...]
    numbers: tuple[int, ...]

    def __len__(self) -> int:
        """How many values a filter names: what a store's query plan is sized by."""
        return len(self.texts) + len(self.numbers)


def spellings(ids: Iterable[str]) -> Spellings:
    """The values a store may hold for any of `ids` (canonical scope ids), sorted, each once."""
    texts: set[str] = set()
    numbers: set[int] = set()
    for each in ids:
        texts.update(uuid_spellings(each) if _CANONICAL_UUID(each) else (each,))
        number = stored_int(each)
        if number is not None:
            numbers.add(number)
    return Spellings(tuple(sorted(texts)), tuple(sorted(numbers)))


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


def scopes_within(scopes: object, reader: Set[str]) -> bool:
    """Whether an item whose metadata names `scopes` is readable by a reader of scope ids
    `reader`: it names at least one scope, and every one of them is the reader's.

    Retrieval uses this to re-check what a store returned, so it never fails: scopes that
    cannot be read as ids are not readable (the packer, reading the same item, says why).
    """
    return read_by(scopes, reader) is True


def may_retrieve(scopes: object, reader: Set[str]) -> bool:
    """What a store filter that runs in this process lets through for a reader of scope ids
    `reader`: the reader's items, and items of several ids written into one string, which the
    exact check after the store withholds and names, as the packer does on any other path,
    rather than leave them silently missing."""
    return read_by(scopes, reader) is not False


def read_by(scopes: object, reader: Set[str]) -> bool | None:
    """`scopes` read once for a reader of scope ids `reader`: `True` when the item is theirs
    (`scopes_within`), `None` when its ids are several written into one string (`"alice,acme"`,
    or a list holding one: a record no reader may read, whose fix is known), `False` otherwise."""
    if scopes is None:
        return False
    try:
        ids = scope_ids(scopes)
    except SeveralIdsInOneError:
        return None
    except (TypeError, ValueError):
        return False
    return bool(ids) and ids <= reader
