"""Scoped retrieval on real data over the two Postgres stores, under row-level security: every id
form the packer accepts is found, an odd record fails no one, and readers of 0 to 10,000 scopes
are answered exactly (bench/scoped_postgres.py times them). The laws and the data of
`test_scoped_real_data.py`, whose eight embedded stores need no server, over the stores that do.

The oracle is the packer itself: what it shows the reader of everything the table holds (read by
the superuser, whom no policy binds) is what scoped retrieval, as the app's role, must return.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from aizk_integrations import ScopeDirectory
from tests.adapters.postgres_stores import PostgresStore, app_database, secure
from tests.adapters.stores import Item
from tests.adapters.test_scoped_real_data import MINE, ODD, QUESTION, READER, _items, sized
from tests.postgres import Server
from tests.scoped_corpus import READERS, directory_of, notes, questions

KINDS = ("langchain-pgvector", "llama-index-pgvector")
APP = "aizk_forms_app"
SIZES = [0, 1, 100, 1000, 10_000]


@pytest.fixture(scope="module")
def stores(postgres_server: Server) -> Iterator[dict[tuple[str, str], PostgresStore]]:
    """For each kind: the store of every form, and the shared store of the 20 readers' notes
    with and without the odd records, each in its own collection or table, then secured."""
    with app_database(postgres_server, "aizk_forms", APP) as database:
        stored = [Item(note.text, note.metadata) for note in notes()]
        odd = [Item(f"odd {name}", {"scopes": value}) for name, value in ODD.items()]
        built = {}
        for kind in KINDS:
            built[kind, "forms"] = PostgresStore(kind, database, APP, "forms", [], _items())
            built[kind, "odd"] = PostgresStore(kind, database, APP, "odd", stored, odd)
            built[kind, "plain"] = PostgresStore(kind, database, APP, "plain", stored, [])
        for table in {store.table for store in built.values()}:
            secure(database, table, APP, hnsw=False)
        yield built


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    chosen: str = request.param
    return chosen


def test_scoped_retrieval_finds_what_the_packer_would_show_in_every_form(
    stores: dict[tuple[str, str], PostgresStore], kind: str
) -> None:
    store = stores[kind, "forms"]
    shown = store.shown(READER, QUESTION)
    assert set(shown) == {f"mine: {name}" for name in MINE} - _refused_texts(store)
    found = store.scoped(READER, QUESTION, k=len(store.held))
    assert ranked(found) == ranked(shown)


def _refused_texts(store: PostgresStore) -> set[str]:
    return {item.text for item in store.refused}


def ranked(texts: list[str]) -> list[tuple[str, ...]]:
    """A ranking up to its ties: texts of the same words have the same vector, and Postgres
    orders rows of the same distance as its plan meets them."""
    return [tuple(sorted(text.split())) for text in texts]


def test_the_async_path_finds_the_same(
    stores: dict[tuple[str, str], PostgresStore], kind: str
) -> None:
    store = stores[kind, "forms"]
    k = len(store.held)
    assert ranked(store.ascoped(READER, QUESTION, k)) == ranked(store.scoped(READER, QUESTION, k))


def test_what_a_store_refuses_to_hold_is_only_what_json_cannot_write(
    stores: dict[tuple[str, str], PostgresStore], kind: str
) -> None:
    """PGVector writes metadata with `json.dumps`, which has no set or UUID; LlamaIndex writes
    a node's metadata through pydantic, which writes a UUID as its text and a set as a list."""
    refused = {item.text.split(": ", 1)[1] for item in stores[kind, "forms"].refused}
    if kind == "langchain-pgvector":
        assert refused == {"a set", "a UUID", "a list of a UUID"}
    else:
        assert refused == set()


def test_odd_records_in_a_shared_table_fail_no_readers_call_and_change_no_answer(
    stores: dict[tuple[str, str], PostgresStore], kind: str
) -> None:
    with_odd, without = stores[kind, "odd"], stores[kind, "plain"]
    for reader in READERS[::4]:
        directory = directory_of(reader)
        question = questions(1, seed=READERS.index(reader))[0]
        found = with_odd.scoped(directory, question, k=12)
        assert not any(text.startswith("odd") for text in found)
        assert ranked(found) == ranked(without.scoped(directory, question, k=12))
        assert with_odd.packed(directory, question, 120) == without.packed(directory, question, 120)


@pytest.mark.parametrize("size", SIZES)
def test_a_reader_of_any_size_is_answered_exactly(
    stores: dict[tuple[str, str], PostgresStore], kind: str, size: int
) -> None:
    store = stores[kind, "odd"]
    reader = sized(READERS[5], size)
    assert len(reader.scopes) == size
    question = questions(1, seed=size)[0]
    found = store.scoped(reader, question, k=12)
    assert ranked(found) == ranked(store.shown(reader, question)[:12])


def test_a_reader_of_no_scopes_is_not_asked_for(
    stores: dict[tuple[str, str], PostgresStore], kind: str
) -> None:
    assert stores[kind, "odd"].scoped(ScopeDirectory(scopes={}), "garden", k=4) == []
