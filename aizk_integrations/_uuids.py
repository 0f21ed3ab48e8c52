"""Canonical UUID text: the one spelling ids are compared in and URIs are written in."""

from __future__ import annotations

import re
from functools import lru_cache
from uuid import UUID

is_canonical = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").fullmatch
"""Whether a text already is a UUID's canonical spelling (lowercase, hyphenated, bare)."""


def canonical_uuid(value: UUID) -> str:
    """A UUID's canonical text, computed from its number rather than from `str()`.

    A `UUID` subclass can make `str()` return anything, markdown included; the number cannot lie.
    """
    return str(value) if type(value) is UUID else str(UUID(int=value.int))


def uuid_text(text: str) -> str | None:
    """The canonical spelling of any text `uuid.UUID` accepts (upper case, braces, `urn:uuid:`,
    no hyphens), or `None` for text that is not a UUID."""
    if is_canonical(text):
        return text
    # Every spelling `UUID` accepts is 32 to 45 characters long; nothing else is worth parsing.
    return _parsed(text) if MAYBE_UUID[0] <= len(text) <= MAYBE_UUID[1] else None


MAYBE_UUID = (32, 45)
"""The lengths of the texts `uuid.UUID` accepts: 32 hex digits up to `urn:uuid:` plus 36."""


@lru_cache(maxsize=1024)
def _parsed(text: str) -> str | None:
    # Cached: a recall names the same few ids over and over.
    try:
        return str(UUID(text))
    except ValueError:
        return None
