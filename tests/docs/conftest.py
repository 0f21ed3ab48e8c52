"""The Postgres page's snippets run against a real server, as a user's would against theirs.

Each python snippet of docs/postgres.md reads two connection URLs from the environment, as an app
reads its configuration: `DATABASE_URL` for the tables' owner (ingestion and the migration) and
`APP_DATABASE_URL` for the role the app queries as. Here each snippet gets a fresh database of
the tests' throwaway server, and `app_reader`, a role with LOGIN and nothing else. Where no server
can start, those snippets skip as every Postgres test does (and fail under CI).
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import count

import pytest
from sqlalchemy import create_engine

from tests.docs.pages import DOCS, Block
from tests.postgres import Server, fresh_database

PAGE = DOCS / "postgres.md"
APP_ROLE = "app_reader"
"""The role the page's migration grants to (`postgres_setup(..., role="app_reader")`)."""
_databases = count()


@pytest.fixture(scope="session")
def app_reader(postgres_server: Server) -> Iterator[Server]:
    engine = create_engine(postgres_server.url())
    with engine.begin() as connection:
        connection.exec_driver_sql(f'CREATE ROLE "{APP_ROLE}" LOGIN NOBYPASSRLS')
    try:
        yield postgres_server
    finally:
        with engine.begin() as connection:
            connection.exec_driver_sql(f'DROP ROLE "{APP_ROLE}"')
        engine.dispose()


@pytest.fixture(autouse=True)
def postgres_for_its_page(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """A fresh database and the two URLs, for a test that runs a snippet of the Postgres page."""
    callspec = getattr(request.node, "callspec", None)
    snippet = callspec.params.get("snippet") if callspec is not None else None
    if not isinstance(snippet, Block) or snippet.page != PAGE:
        yield
        return
    server: Server = request.getfixturevalue("app_reader")
    with fresh_database(server, f"aizk_docs_{next(_databases)}") as database:
        monkeypatch.setenv("DATABASE_URL", database.url())
        monkeypatch.setenv("APP_DATABASE_URL", database.url(user=APP_ROLE))
        yield
