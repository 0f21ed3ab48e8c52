"""Canonical UUID text: the one spelling ids are compared in and resource URIs are written in."""

from __future__ import annotations

import re
from uuid import UUID

CANONICAL_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
"""A UUID's canonical spelling (lowercase, hyphenated, bare), as a regular expression."""
_CANONICAL = re.compile(CANONICAL_UUID).fullmatch


def canonical_uuid(value: UUID) -> str:
    """A UUID's canonical text, written by `UUID`'s own `__str__` from its number.

    A `UUID` subclass can make its `str()` return anything, markdown included.
    """
    return UUID.__str__(value)


def uuid_text(text: str) -> str | None:
    """The canonical spelling of any text `uuid.UUID` accepts (upper case, braces, `urn:uuid:`,
    no hyphens), or `None` for text that is not a UUID."""
    if _CANONICAL(text):  # already its canonical spelling
        return text
    try:
        return str(UUID(text))
    except ValueError:
        return None


def resource_uri(artifact_id: str | None, artifact_content_id: str | None) -> str | None:
    """Where an MCP client fetches the exact stored revision: both ids, or no URI at all.

    The ids are canonical UUID text, so the URI is too.
    """
    if artifact_id is None or artifact_content_id is None:
        return None
    return f"aizk://artifacts/{artifact_id}/contents/{artifact_content_id}"


RESOURCE_URI_PATTERN = f"^aizk://artifacts/{CANONICAL_UUID}/contents/{CANONICAL_UUID}$"
"""The only shape a resource URI takes: what `resource_uri` writes."""
