"""The small offline corpus every example runs on: a few dozen notes by two readers.

`sam` is in the book club and the retrieval team, `ana` in the book club and the garden share,
so the same retrieval renders a different block for each of them. One note is a pasted web page
that tries to pose as prompt structure, and one has no scope at all.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aizk_integrations import Scope, ScopeDirectory

CORPUS_PATH = Path(__file__).with_name("corpus.json")
READERS = ("sam", "ana")


def _load() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(CORPUS_PATH.read_text(encoding="utf-8"))
    return data


def load_notes() -> list[dict[str, Any]]:
    """Each note as `{"id", "text", "metadata"}`; metadata follows DESIGN.md's keys."""
    notes: list[dict[str, Any]] = _load()["notes"]
    return notes


def reader_directory(reader: str) -> ScopeDirectory:
    """The reader's own scope plus every organization they are a member of."""
    if reader not in READERS:
        raise ValueError(f"unknown reader {reader!r}; the corpus has {', '.join(READERS)}")
    organizations = {
        scope_id: Scope(name=org["name"], description=org["description"])
        for scope_id, org in _load()["organizations"].items()
        if reader in org["members"]
    }
    return ScopeDirectory.for_caller(reader, organizations)
