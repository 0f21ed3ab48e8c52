"""The Postgres SQL, run on a real server: the readable-row condition is exact for every id form,
the row-level security policy hides every other reader's row from the app's role whatever it
queries, the reader setting never outlives its transaction on a pooled connection, and the
indexes serve a common and a rare reader.

Each statement runs as the stores will run it: through SQLAlchemy, on the drivers their engines
use (psycopg 3 for PGVector and LlamaIndex's sync path, asyncpg for LlamaIndex's async one).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import Connection, Engine, create_engine, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import create_async_engine

from aizk_integrations._scopes.ids import scopes_within
from aizk_integrations._stores.postgres.condition import readable_row, reader_ids
from aizk_integrations._stores.postgres.names import StoreTable
from aizk_integrations._stores.postgres.reading import (
    ITERATIVE_SCAN,
    PREFER_VECTOR_INDEX,
    ROW_SECURITY_ACTIVE,
    SET_READER_IDS,
)
from aizk_integrations._stores.postgres.setup import (
    embedding_index,
    reading_grants,
    row_security,
    scope_ids_column,
    scope_ids_functions,
    scopes_index,
)
from tests.postgres import Server, fresh_database
from tests.scoped_corpus import READERS, notes, organizations_of, readable_by

KEY = "scopes"
UUID = "019820a1-0000-7000-8000-000000000001"
HEX, URN, BRACED = UUID.replace("-", ""), f"urn:uuid:{UUID}", f"{{{UUID}}}"
SAM = reader_ids(["sam", "7", UUID])
"""Sam's ids, as bound: canonical, as the packer holds them, whatever spellings rows hold."""
APP, OWNER, BYPASS = "aizk_sql_app", "aizk_sql_owner", "aizk_sql_bypass"
NOTES = StoreTable("public", "notes", metadata="cmetadata")
LOOSE = StoreTable("public", "loose_notes", metadata="cmetadata")
"""A table under the policy but not FORCE: its owner is exempt."""
RANKED = StoreTable("public", "ranked", metadata="cmetadata")
STORED = notes(200)


@pytest.fixture(scope="module")
def server(postgres_server: Server) -> Iterator[Server]:
    """This module's database, its roles and its tables."""
    with fresh_database(postgres_server, "aizk_sql") as database:
        engine = create_engine(database.url())
        try:
            with engine.begin() as connection:
                _create_roles_and_tables(connection)
            yield database
        finally:
            with engine.begin() as connection:
                connection.execute(text(f"DROP OWNED BY {APP}, {OWNER}, {BYPASS}"))
            engine.dispose()
    cluster = create_engine(postgres_server.url())  # roles belong to the cluster
    with cluster.begin() as connection:
        connection.execute(text(f"DROP ROLE {APP}, {OWNER}, {BYPASS}"))
    cluster.dispose()


def _create_roles_and_tables(connection: Connection) -> None:
    for function in scope_ids_functions(NOTES):
        connection.exec_driver_sql(function)
    connection.execute(text(f"CREATE ROLE {APP} LOGIN NOBYPASSRLS"))
    connection.execute(text(f"CREATE ROLE {OWNER} LOGIN NOBYPASSRLS"))
    connection.execute(text(f"CREATE ROLE {BYPASS} LOGIN BYPASSRLS"))
    for table in (NOTES, LOOSE):
        connection.execute(
            text(f"CREATE TABLE {table.name} (id text PRIMARY KEY, cmetadata jsonb)")
        )
        connection.exec_driver_sql(scope_ids_column(table, KEY))
        connection.execute(text(f"ALTER TABLE {table.name} OWNER TO {OWNER}"))
        rows = [{"id": n.id, "metadata": json.dumps(n.metadata)} for n in STORED]
        insert = f"INSERT INTO {table.name} VALUES (:id, CAST(:metadata AS jsonb))"
        connection.execute(text(insert), rows)
        for grant in reading_grants(APP, table):
            connection.exec_driver_sql(grant)
        connection.exec_driver_sql(f"GRANT SELECT ON {table.name} TO {BYPASS}")
    for statement in row_security(NOTES, KEY):
        connection.exec_driver_sql(statement)
    enable, _, drop, policy = row_security(LOOSE, KEY)  # enabled, not forced
    for statement in (enable, drop, policy):
        connection.exec_driver_sql(statement)


def _is_readable(connection: Connection, metadata_type: str, stored: str | None, ids: str) -> bool:
    """Whether a row whose metadata holds `stored` under the key (None: no key) is readable."""
    metadata = json.dumps({} if stored is None else {KEY: json.loads(stored)})
    metadata_column = f"CAST(:metadata AS {metadata_type})"
    generated = f"public.aizk_scope_ids({metadata_column}::jsonb -> '{KEY}') AS aizk_{KEY}"
    row = f"(SELECT {metadata_column} AS cmetadata, {generated}) AS notes"  # as the column is
    condition = readable_row(NOTES, KEY)
    query = text(f"SELECT count(*) FROM {row} WHERE {condition}")
    return bool(connection.execute(query, {"metadata": metadata, "reader_ids": ids}).scalar())


ID_FORMS = [
    ('"sam"', SAM, True),  # a bare string is one id
    ("7", SAM, True),  # a bare int
    ('"7"', SAM, True),
    ('["sam"]', SAM, True),
    ('["sam", "sam"]', SAM, True),
    ("[7]", SAM, True),
    ('[7, "7"]', SAM, True),
    (f'["sam", 7, "{UUID}"]', SAM, True),  # a mixed list
    (f'"{UUID.upper()}"', SAM, True),  # the reader's spellings include the upper case,
    (f'["{HEX}", "{HEX.upper()}"]', SAM, True),  # the bare hex,
    (f'["{URN}", "{BRACED.upper()}"]', SAM, True),  # the URN and braces
    (f'["{UUID.upper()}"]', json.dumps(["sam", UUID]), True),  # read as canonical ids
    ("7.0", SAM, False),  # a float is no id, though jsonb compares it equal to 7
    ("[7.0]", SAM, False),
    ('["7.0"]', SAM, False),
    ("1180591620717411303424", SAM, False),
    ('["sam", "ana"]', SAM, False),  # one scope is not Sam's
    ('"ana"', SAM, False),
    ("[8]", SAM, False),
    ('["8"]', SAM, False),
    ("[]", SAM, False),  # in no scope
    ("null", SAM, False),
    (None, SAM, False),  # no scopes key at all
    ("{}", SAM, False),
    ('{"sam": true}', SAM, False),  # an object is not a list of ids
    ('[["sam"]]', SAM, False),
    ("[null]", SAM, False),
    ("true", SAM, False),
    ('""', SAM, False),
    ('["sam"]', "[]", False),  # a reader of no scopes reads nothing
]


@pytest.fixture(scope="module")
def superuser(server: Server) -> Iterator[Connection]:
    engine = create_engine(server.url())
    try:
        with engine.connect() as connection:
            yield connection
    finally:
        engine.dispose()


@pytest.mark.parametrize("metadata_type", ["jsonb", "json"])
@pytest.mark.parametrize(("stored", "ids", "readable"), ID_FORMS)
def test_the_condition_reads_a_row_exactly_when_every_scope_is_one_of_the_readers_ids(
    superuser: Connection, metadata_type: str, stored: str | None, ids: str, readable: bool
) -> None:
    assert _is_readable(superuser, metadata_type, stored, ids) is readable


_ID = st.sampled_from(
    ["sam", "ana", "7", 7, 8, -7, UUID, UUID.upper(), HEX, URN, BRACED, "", "sam,ana", 7.0]
)
_STORED = st.one_of(
    _ID,
    st.lists(_ID, max_size=4),
    st.sampled_from([None, {}, {"sam": 1}, [["sam"]], True, 1.5, [True], 2**70]),
)


@settings(max_examples=80, deadline=None)
@given(stored=_STORED, reader=st.sets(st.sampled_from(["sam", "ana", "7", "8", "-7", UUID])))
def test_the_database_reads_a_row_as_readable_exactly_when_the_packer_does(
    superuser: Connection, stored: Any, reader: set[str]
) -> None:
    found = _is_readable(superuser, "jsonb", json.dumps(stored), reader_ids(reader))
    assert found is scopes_within(stored, frozenset(reader))


_TEXT = st.sampled_from(["sam", "ana", "7", UUID, UUID.upper(), HEX, URN, BRACED, "", "sam,ana"])


@settings(max_examples=60, deadline=None)
@given(
    stored=st.lists(st.one_of(_TEXT, st.none()), max_size=4),
    reader=st.sets(st.sampled_from(["sam", "ana", "7", UUID])),
)
def test_a_text_array_column_is_read_as_the_packer_reads_its_ids(
    superuser: Connection, stored: list[str | None], reader: set[str]
) -> None:
    """A `PGVectorStore` may keep the scopes in a text[] column of their own; the column of
    canonical ids the database generates from it reads each as the packer does."""
    ids = superuser.execute(
        text("SELECT public.aizk_scope_ids(CAST(:stored AS text[]))"), {"stored": stored}
    ).scalar_one()
    readable = bool(ids) and set(ids) <= reader  # the empty text is nobody's id
    assert readable is scopes_within(stored, frozenset(reader))


def test_a_scopes_key_that_is_not_a_plain_name_is_refused() -> None:
    with pytest.raises(ValueError, match="plain name"):
        scope_ids_column(NOTES, "scopes:x")
    with pytest.raises(ValueError, match="plain name"):
        readable_row(NOTES, "scopes:x")


def _as(server: Server, role: str, **pool: Any) -> Engine:
    return create_engine(server.url(user=role), **pool)


def _visible(connection: Connection, table: StoreTable, reader: str | None) -> set[str]:
    """The ids `SELECT *` returns, with no WHERE, in one transaction reading as `reader`."""
    with connection.begin():
        if reader is not None:
            ids = reader_ids({reader, *organizations_of(reader)})
            connection.execute(text(SET_READER_IDS), {"reader_ids": ids})
        return {row.id for row in connection.execute(text(f"SELECT * FROM {table.name}"))}


def _readable_ids(reader: str) -> set[str]:
    return {note.id for note in readable_by(reader, STORED)}


def test_under_the_policy_the_apps_role_sees_only_the_readers_rows_even_with_no_where(
    server: Server,
) -> None:
    engine = _as(server, APP)
    try:
        with engine.connect() as connection:
            for reader in READERS[:3]:
                assert _visible(connection, NOTES, reader) == _readable_ids(reader)
    finally:
        engine.dispose()


def test_a_transaction_that_sets_no_reader_sees_no_row_even_after_one_that_did(
    server: Server,
) -> None:
    engine = _as(server, APP)
    try:
        with engine.connect() as connection:
            assert _visible(connection, NOTES, None) == set()  # never set on this connection
            assert _visible(connection, NOTES, READERS[0])
            setting = "SELECT current_setting('aizk.reader_ids', true)"
            assert connection.execute(text(setting)).scalar() == ""  # gone with its transaction
            connection.rollback()
            assert _visible(connection, NOTES, None) == set()
    finally:
        engine.dispose()


def test_the_owner_is_bound_by_the_policy_because_it_is_forced(server: Server) -> None:
    engine = _as(server, OWNER)
    try:
        with engine.connect() as connection:
            assert _visible(connection, NOTES, None) == set()
            assert _visible(connection, NOTES, READERS[1]) == _readable_ids(READERS[1])
            assert len(_visible(connection, LOOSE, None)) == len(STORED)  # not forced: exempt
    finally:
        engine.dispose()


@pytest.mark.parametrize(
    ("role", "table", "bound"),
    [
        (APP, NOTES, True),
        (APP, LOOSE, True),
        (OWNER, NOTES, True),  # FORCE
        (OWNER, LOOSE, False),  # the owner of a table without FORCE
        (BYPASS, NOTES, False),  # BYPASSRLS
        ("postgres", NOTES, False),  # a superuser
    ],
)
def test_row_security_active_says_whether_the_policy_binds_a_role(
    server: Server, role: str, table: StoreTable, bound: bool
) -> None:
    engine = _as(server, role)
    try:
        with engine.connect() as connection:
            active = connection.execute(text(ROW_SECURITY_ACTIVE), {"table": table.name})
            assert active.scalar() is bound
    finally:
        engine.dispose()


def test_the_apps_role_may_read_and_nothing_else(superuser: Connection) -> None:
    check = text("SELECT has_table_privilege(:role, :table, :privilege)")
    granted = {
        privilege
        for privilege in ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "TRIGGER")
        if superuser.execute(
            check, {"role": APP, "table": NOTES.name, "privilege": privilege}
        ).scalar()
    }
    assert granted == {"SELECT"}
    attributes = text("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = :role")
    assert tuple(superuser.execute(attributes, {"role": APP}).one()) == (False, False)


def _insert_as_sam(connection: Connection, scopes: list[str]) -> None:
    """Insert one row in `scopes` in a transaction reading as Sam, and roll it back."""
    with connection.begin() as transaction:
        connection.execute(text(SET_READER_IDS), {"reader_ids": reader_ids(["sam"])})
        row = {"id": "new", "metadata": json.dumps({KEY: scopes})}
        connection.execute(text("INSERT INTO notes VALUES (:id, CAST(:metadata AS jsonb))"), row)
        transaction.rollback()


def test_a_role_that_may_write_writes_only_rows_within_its_reader_ids(server: Server) -> None:
    engine = _as(server, OWNER)
    try:
        with engine.connect() as connection:
            _insert_as_sam(connection, ["sam"])
            with pytest.raises(DBAPIError, match="violates row-level security policy"):
                _insert_as_sam(connection, ["sam", "ana"])
    finally:
        engine.dispose()


REQUESTS = 200


def _requests() -> list[str | None]:
    """200 requests from the 20 readers, every tenth naming no reader."""
    return [None if number % 10 == 9 else READERS[number % 20] for number in range(REQUESTS)]


def _expected(reader: str | None) -> set[str]:
    return set() if reader is None else _readable_ids(reader)


def test_on_a_pool_of_4_connections_no_request_sees_another_requests_reader(
    server: Server,
) -> None:
    engine = _as(server, APP, pool_size=4, max_overflow=0)
    setting = text("SELECT current_setting('aizk.reader_ids', true), pg_backend_pid()")

    def request(reader: str | None) -> tuple[str | None, int, set[str]]:
        with engine.connect() as connection:
            inherited, backend = connection.execute(setting).one()
            connection.rollback()
            return inherited, backend, _visible(connection, NOTES, reader)

    try:
        with ThreadPoolExecutor(max_workers=20) as workers:
            answers = list(workers.map(request, _requests()))
    finally:
        engine.dispose()
    assert {inherited for inherited, _, _ in answers} <= {None, ""}
    assert len({backend for _, backend, _ in answers}) <= 4
    assert [seen for _, _, seen in answers] == [_expected(reader) for reader in _requests()]


def test_on_an_async_pool_of_4_connections_no_request_sees_another_requests_reader(
    server: Server,
) -> None:
    async def run() -> list[set[str]]:
        engine = create_async_engine(server.url("asyncpg", user=APP), pool_size=4, max_overflow=0)

        async def request(reader: str | None) -> set[str]:
            async with engine.connect() as connection, connection.begin():
                if reader is not None:
                    ids = reader_ids({reader, *organizations_of(reader)})
                    await connection.execute(text(SET_READER_IDS), {"reader_ids": ids})
                await connection.execute(text(ITERATIVE_SCAN))
                await asyncio.sleep(0)  # let the other requests interleave on the pool
                rows = await connection.execute(text("SELECT * FROM notes"))
                return {row.id for row in rows}

        try:
            return list(await asyncio.gather(*(request(r) for r in _requests())))
        finally:
            await engine.dispose()

    assert asyncio.run(run()) == [_expected(reader) for reader in _requests()]


def test_a_query_carrying_the_condition_finds_each_readers_rows_on_either_driver(
    server: Server,
) -> None:
    condition = readable_row(LOOSE, KEY)
    query = text(f"SELECT id FROM loose_notes WHERE {condition}")
    reader = READERS[4]
    ids = reader_ids({reader, *organizations_of(reader)})

    async def on_asyncpg() -> set[str]:
        engine = create_async_engine(server.url("asyncpg"))
        try:
            async with engine.connect() as connection:
                return {row.id for row in await connection.execute(query, {"reader_ids": ids})}
        finally:
            await engine.dispose()

    engine = create_engine(server.url())
    try:
        with engine.connect() as connection:
            on_psycopg = {row.id for row in connection.execute(query, {"reader_ids": ids})}
    finally:
        engine.dispose()
    assert on_psycopg == asyncio.run(on_asyncpg()) == _readable_ids(reader)


QUERY = "[" + ", ".join(f"{(number % 7 - 3) / 10:.1f}" for number in range(32)) + "]"
"""A fixed query vector of the 32 dimensions of the ranked table."""
RANKED_READERS = {"common": 5000, "small": 500, "rare": 3}
"""How many of the ranked table's 10,003 rows each reader owns; the rest are 100 others'."""


@pytest.fixture(scope="module")
def ranked(server: Server) -> Iterator[Connection]:
    """10,003 rows of random 32-dimension vectors, indexed both ways and under the policy."""
    engine = create_engine(server.url())
    try:
        with engine.connect() as superuser:
            _create_ranked(superuser)
            yield superuser
    finally:
        engine.dispose()


def _create_ranked(superuser: Connection) -> None:
    with superuser.begin():
        superuser.execute(text("SELECT setseed(0.25)"))
        superuser.execute(text(
            "CREATE TABLE ranked (id bigserial PRIMARY KEY, embedding vector(32), cmetadata jsonb)"
        ))  # fmt: skip
        superuser.execute(text(
            "INSERT INTO ranked (embedding, cmetadata) SELECT"
            " (SELECT array_agg(random() - 0.5) FROM generate_series(1, 32) WHERE n > 0)::vector,"
            " jsonb_build_object('scopes', jsonb_build_array(CASE"
            "   WHEN n <= 5000 THEN 'common' WHEN n <= 5500 THEN 'small' WHEN n <= 5503 THEN 'rare'"
            "   ELSE 'user-' || n % 100 END))"
            " FROM generate_series(1, 10003) AS n"
        ))  # fmt: skip
        superuser.exec_driver_sql(scope_ids_column(RANKED, KEY))
        superuser.exec_driver_sql(scopes_index(RANKED, KEY))
        superuser.exec_driver_sql(embedding_index(RANKED))
        for statement in [*row_security(RANKED, KEY), *reading_grants(APP, RANKED)]:
            superuser.exec_driver_sql(statement)
        superuser.execute(text("ANALYZE ranked"))


def _search(
    connection: Connection, reader: str | None, *settings: str, filtered: bool = True
) -> tuple[list[str], int]:
    """The plan of a top-10 search as `reader` (the query's filter, or the policy's alone), and
    how many rows it returns; in one transaction with `settings`."""
    where = f"WHERE {readable_row(RANKED, KEY)}" if filtered else ""
    query = f"SELECT id FROM ranked {where} ORDER BY embedding <=> CAST(:query AS vector) LIMIT 10"
    ids = reader_ids([] if reader is None else [reader])
    with connection.begin():
        connection.execute(text(SET_READER_IDS), {"reader_ids": ids})
        for setting in settings:
            connection.execute(text(setting))
        parameters = {"query": QUERY, "reader_ids": ids}
        plan = connection.execute(text(f"EXPLAIN (COSTS OFF) {query}"), parameters).scalars()
        found = len(connection.execute(text(query), parameters).all())
    return list(plan), found


def _uses(plan: list[str], step: str) -> bool:
    return any(step in line for line in plan)


SCOPES_SCAN = "Bitmap Index Scan on ranked_aizk_scopes_ids"
VECTOR_SCAN = "Index Scan using ranked_aizk_embedding"


def test_a_rare_readers_rows_are_looked_up_in_the_scopes_index_and_all_come_back(
    ranked: Connection,
) -> None:
    plan, found = _search(ranked, "rare", ITERATIVE_SCAN)
    assert _uses(plan, SCOPES_SCAN), plan
    assert found == 3


@pytest.mark.parametrize("reader", ["common", "small"])
def test_a_readers_search_comes_back_full_through_either_index(
    ranked: Connection, reader: str
) -> None:
    plan, found = _search(ranked, reader, ITERATIVE_SCAN)
    assert _uses(plan, SCOPES_SCAN) or _uses(plan, VECTOR_SCAN), plan
    assert found == 10


def test_a_filtered_vector_index_search_comes_back_short_without_the_iterative_scan(
    ranked: Connection,
) -> None:
    vector_index_only = (PREFER_VECTOR_INDEX, "SET LOCAL enable_seqscan = off")
    plan, short = _search(ranked, "small", *vector_index_only)
    assert _uses(plan, VECTOR_SCAN), plan
    assert short < 10  # ef_search's 40 candidates hold about two of a 5% reader's rows
    plan, found = _search(ranked, "small", *vector_index_only, ITERATIVE_SCAN)
    assert _uses(plan, VECTOR_SCAN), plan
    assert found == 10


@pytest.fixture(scope="module")
def app(server: Server, ranked: Connection) -> Iterator[Connection]:
    engine = _as(server, APP)
    try:
        with engine.connect() as connection:
            yield connection
    finally:
        engine.dispose()


def test_under_the_policy_alone_a_rare_reader_is_looked_up_in_the_scopes_index(
    app: Connection,
) -> None:
    plan, found = _search(app, "rare", ITERATIVE_SCAN, filtered=False)
    assert _uses(plan, SCOPES_SCAN), plan
    assert found == 3


def test_under_the_policy_a_common_reader_preferring_the_vector_index_skips_the_scopes_index(
    app: Connection,
) -> None:
    plan, found = _search(app, "common", ITERATIVE_SCAN, PREFER_VECTOR_INDEX, filtered=False)
    assert not _uses(plan, SCOPES_SCAN), plan  # 10,003 rows: the planner scans them instead
    assert found == 10
    vector_index_only = (PREFER_VECTOR_INDEX, "SET LOCAL enable_seqscan = off")
    plan, found = _search(app, "common", ITERATIVE_SCAN, *vector_index_only, filtered=False)
    assert _uses(plan, VECTOR_SCAN), plan
    assert found == 10


def test_under_the_policy_a_search_with_no_reader_returns_nothing(app: Connection) -> None:
    assert _search(app, None, ITERATIVE_SCAN, filtered=False)[1] == 0
