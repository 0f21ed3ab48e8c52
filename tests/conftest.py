"""Fixtures shared by the core tests: the seed's own example recall."""

from __future__ import annotations

from uuid import UUID

import pytest

from aizk_integrations import Candidate, Lane, Scope, ScopeDirectory

SAM = "sam"
BOOK_CLUB = "org-book-club"
ARTIFACT = UUID("019820a1-0000-7000-8000-000000000001")
CONTENT = UUID("019820a4-0000-7000-8000-000000000002")


@pytest.fixture
def seed_directory() -> ScopeDirectory:
    return ScopeDirectory.for_caller(
        SAM, {BOOK_CLUB: Scope(name="book-club", description="Neighborhood book club, Kawasaki")}
    )


@pytest.fixture
def seed_candidates() -> list[Candidate]:
    return [
        Candidate(
            lane=Lane.SOURCES,
            line=(
                "Q3 Retrieval Plan by Sam (author) observed 2026-07-02\n"
                "  Week three targets the reranker ablation and the fused-lane sweep."
            ),
            scopes=[SAM, BOOK_CLUB],
            artifact_id=ARTIFACT,
            artifact_content_id=CONTENT,
        ),
        Candidate(
            lane=Lane.FACTS,
            line="- [Sam, author, preference] (prefers) Sam prefers morning study blocks.",
            scopes=[SAM],
        ),
        Candidate(
            lane=Lane.WORKING_MEMORY,
            line="- [note] Sam: reranker sidecar is back up on port 8004.",
            scopes=[SAM],
        ),
    ]
