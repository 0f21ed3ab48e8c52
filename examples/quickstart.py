"""Quickstart (interim): render the seed's example recall, the block DESIGN.md pins.

Run it with `python examples/quickstart.py`. It needs only the core package.
"""

from uuid import UUID

from aizk_integrations import Candidate, Lane, RecallResult, Scope, ScopeDirectory, explain, pack

SAM = "sam"
BOOK_CLUB = "org-book-club"
ARTIFACT = UUID("019820a1-0000-7000-8000-000000000001")
CONTENT = UUID("019820a4-0000-7000-8000-000000000002")


def seed_directory() -> ScopeDirectory:
    """Sam reading, with the book club as the one organization Sam belongs to."""
    return ScopeDirectory.for_caller(
        SAM, {BOOK_CLUB: Scope(name="book-club", description="Neighborhood book club, Kawasaki")}
    )


def seed_candidates() -> list[Candidate]:
    """The three rows of the seed's example response, in merit order."""
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


def main() -> None:
    candidates = seed_candidates()
    kept = pack(candidates, 2048)
    print(RecallResult.from_candidates(kept, seed_directory()).to_markdown())
    print()
    print(explain(candidates, 2048))


if __name__ == "__main__":
    main()
