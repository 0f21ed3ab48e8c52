"""Scope ids: the one text every directory, item and store filter agrees a scope is called."""

from __future__ import annotations

import re
from collections.abc import Set
from uuid import UUID

from aizk_integrations._errors import quoted
from aizk_integrations._uuids import canonical_uuid, uuid_text


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
