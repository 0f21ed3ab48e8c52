"""The Postgres page shows the SQL the library composes and its tests run on a real server,
statement for statement: a reader copying the policy, the grants or an index copies the tested
one. (How the readable-row condition is written is the code's to say, in its docstrings.)"""

from __future__ import annotations

import re

import pytest

from aizk_integrations._stores.postgres.names import PGVECTOR_TABLE
from aizk_integrations._stores.postgres.reading import (
    ITERATIVE_SCAN,
    PREFER_VECTOR_INDEX,
    ROW_SECURITY_ACTIVE,
    SET_READER_IDS,
    START_READING,
)
from aizk_integrations._stores.postgres.setup import reader_setup
from tests.docs.pages import DOCS, blocks

PAGE = DOCS / "postgres.md"


def _spaceless(sql: str) -> str:
    """SQL without comments and whitespace, so a statement laid out over lines still matches."""
    return re.sub(r"\s+", "", re.sub(r"--[^\n]*", "", sql))


def _shown() -> set[str]:
    """Every statement of the page's sql blocks, and each block whole."""
    shown = set()
    for block in blocks(PAGE):
        if block.language == "sql":
            shown.add(_spaceless(block.code))
            shown |= {_spaceless(each) for each in block.code.split(";") if each.strip()}
    return shown


COMPOSED = reader_setup(PGVECTOR_TABLE, "scopes", "app_reader")
"""What `postgres_setup(store, role="app_reader")` returns for PGVector's table, for scoped
retrieval (the revision statements after them are the MCP boundary's)."""


@pytest.mark.parametrize("statement", COMPOSED)
def test_the_page_shows_each_composed_statement_as_the_library_writes_it(statement: str) -> None:
    assert _spaceless(statement) in _shown()


@pytest.mark.parametrize(
    "statement",
    [START_READING, SET_READER_IDS, ITERATIVE_SCAN, PREFER_VECTOR_INDEX, ROW_SECURITY_ACTIVE],
)
def test_the_page_shows_each_per_transaction_statement_as_the_library_runs_it(
    statement: str,
) -> None:
    assert _spaceless(statement) in _shown()
