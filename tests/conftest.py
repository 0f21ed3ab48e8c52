"""Fixtures every group of tests shares: the seed's own example recall, a fresh process's logging
state for each test, and a Postgres server."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from aizk_integrations import Candidate, Lane, Scope, ScopeDirectory
from aizk_integrations._run import report as _report
from tests.golden import (
    ARTIFACT,
    BOOK_CLUB,
    BOOK_CLUB_DESCRIPTION,
    BOOK_CLUB_NAME,
    CONTENT,
    PLAN,
    PREFERENCE,
    SAM,
    SIDECAR,
)
from tests.postgres import NoServerError, Server, throwaway_server


def pytest_configure(config: pytest.Config) -> None:
    """Let pytest-asyncio (which langchain-tests brings) run LangChain's standard suite's async
    tests as they are written, unmarked. Set here rather than in the ini file, where it would be
    an unknown option, under `--strict-config`, wherever the plugin is absent; nothing else in
    the suite is a coroutine."""
    config.option.asyncio_mode = "auto"


@pytest.fixture(autouse=True)
def as_in_a_new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test logs as the first call of a new process would: advice logged once per process
    by an earlier test is not taken as said, so no test depends on which ran before it."""
    monkeypatch.setattr(_report, "_SAID", set())


@pytest.fixture
def seed_directory() -> ScopeDirectory:
    return ScopeDirectory.for_caller(
        SAM, {BOOK_CLUB: Scope(name=BOOK_CLUB_NAME, description=BOOK_CLUB_DESCRIPTION)}
    )


@pytest.fixture
def seed_candidates() -> list[Candidate]:
    return [
        Candidate(
            lane=Lane.SOURCES,
            line=PLAN,
            scopes=[SAM, BOOK_CLUB],
            artifact_id=ARTIFACT,
            artifact_content_id=CONTENT,
        ),
        Candidate(lane=Lane.FACTS, line=PREFERENCE, scopes=[SAM]),
        Candidate(lane=Lane.WORKING_MEMORY, line=SIDECAR, scopes=[SAM]),
    ]


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Server]:
    """A PostgreSQL server with pgvector for the whole session, started on first use.

    Where none can be started the tests that need one skip, saying why in one line; under CI
    (`CI=true`), where .ci/run has installed pgvector, they fail instead, so a broken install
    cannot pass as a green run of fewer tests.
    """
    with ExitStack() as running:
        try:
            server = running.enter_context(throwaway_server())
        except NoServerError as unavailable:
            if os.environ.get("CI") == "true":
                pytest.fail(f"CI needs a PostgreSQL server with pgvector: {unavailable}")
            pytest.skip(f"no PostgreSQL server with pgvector: {unavailable}")
        yield server
