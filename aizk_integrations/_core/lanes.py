"""Where an item came from: six internal lanes, and the three public provenance classes."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal


class Lane(StrEnum):
    """The retrieval lane an item came from.

    Lanes are an internal detail: they decide the public provenance of an item and never appear
    in the rendered block or the public JSON (only in the cut table, a debugging view).
    """

    SOURCES = "sources"
    WORKING_MEMORY = "working_memory"
    FACTS = "facts"
    PROFILE = "profile"
    COMMUNITIES = "communities"
    OVERVIEW = "overview"


LaneName = Literal["sources", "working_memory", "facts", "profile", "communities", "overview"]
"""A lane spelled as text, as metadata and callers write it; the type checker knows the six."""


class Provenance(StrEnum):
    """The three public classes the six internal lanes collapse onto."""

    SOURCE = "source"
    SESSION = "session"
    DERIVED = "derived"


PROVENANCE_OF_LANE = {
    Lane.SOURCES: Provenance.SOURCE,
    Lane.WORKING_MEMORY: Provenance.SESSION,
    Lane.FACTS: Provenance.DERIVED,
    Lane.PROFILE: Provenance.DERIVED,
    Lane.COMMUNITIES: Provenance.DERIVED,
    Lane.OVERVIEW: Provenance.DERIVED,
}
"""Where each lane lands in public: lane names themselves never cross."""
