"""A throwaway PostgreSQL server with pgvector, for the Postgres tests and bench/scoped.py.

The stores under test (langchain-postgres's `PGVector`, LlamaIndex's `PGVectorStore`) and the
row-level security policy only mean something against a real server, so one is started per
test session: a fresh cluster in a temporary directory, on 127.0.0.1 and a free port, trusted
only there, with `CREATE EXTENSION vector` done; stopped and deleted afterwards. PostgreSQL
refuses to run as root, so as root it runs as the `postgres` user. pgvector comes from
tools/install_pgvector.sh (users install it from their own package manager or image).

Nothing here imports pytest or a database driver: `NoServerError` says in one line why no
server could be started, and the caller decides whether that skips or fails. The tests take the
`postgres_server` fixture (tests/conftest.py); a benchmark runs `with throwaway_server() as
server:` itself (the editable install puts the repository root, so `tests`, on the path).
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

POSTGRES_BIN = Path("/usr/lib/postgresql/15/bin")
"""Debian 12's PostgreSQL 15 server programs, which the machines and CI have."""
SUPERUSER = "postgres"
DATABASE = "postgres"
FAST_AND_LOSSY = ("-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
"""Durability a throwaway cluster does not need, traded for speed."""


class NoServerError(RuntimeError):
    """No PostgreSQL server with pgvector could be started here; the message says why."""


@dataclass(frozen=True)
class Server:
    """A running server: where it listens, and as whom to connect (a trusted superuser)."""

    host: str
    port: int
    user: str = SUPERUSER
    dbname: str = DATABASE

    @property
    def conninfo(self) -> str:
        """libpq connection string, as psycopg and psql take it."""
        return f"host={self.host} port={self.port} user={self.user} dbname={self.dbname}"

    def url(self, driver: str = "psycopg", user: str | None = None) -> str:
        """SQLAlchemy URL, e.g. `postgresql+psycopg://postgres@127.0.0.1:5433/postgres`; the
        drivers the stores use are `psycopg` (PGVector), `psycopg2` and `asyncpg`
        (PGVectorStore). `user` connects as another role of the cluster (all are trusted)."""
        return f"postgresql+{driver}://{user or self.user}@{self.host}:{self.port}/{self.dbname}"


@contextmanager
def throwaway_server() -> Iterator[Server]:
    """Start a cluster with pgvector for the duration of the `with` block.

    Raises `NoServerError` before the block when this machine cannot run one: no server
    programs, no pgvector, or a server that would not start (its log's last line says why).
    """
    initdb, pg_ctl = POSTGRES_BIN / "initdb", POSTGRES_BIN / "pg_ctl"
    if not initdb.exists():
        raise NoServerError(f"no PostgreSQL 15 server programs at {POSTGRES_BIN}")
    control = Path(_pg_config("--sharedir")) / "extension" / "vector.control"
    if not control.exists():
        raise NoServerError(f"pgvector is not installed ({control}): see tools/README.md")
    version = re.search(r"default_version\s*=\s*'(\d+)\.(\d+)", control.read_text())
    if version is None or (int(version[1]), int(version[2])) < (0, 8):
        raise NoServerError(f"pgvector at {control} is older than 0.8: see tools/README.md")
    user = SUPERUSER if os.geteuid() == 0 else None  # as root, run as postgres; else as oneself
    directory = Path(tempfile.mkdtemp(prefix="aizk-postgres-"))
    try:
        if user is not None:
            try:
                shutil.chown(directory, user)
            except LookupError:
                raise NoServerError(f"no {user} user to run the server as") from None
        data, log = directory / "data", directory / "server.log"
        _run(user, initdb, "-D", data, "-U", SUPERUSER, "--auth=trust", "-E", "UTF8",
             "--locale=C.UTF-8", "--no-sync")  # fmt: skip
        server = Server(host="127.0.0.1", port=_free_port())
        options = ["-p", str(server.port), "-c", f"listen_addresses={server.host}"]
        options += ["-k", str(directory), *FAST_AND_LOSSY]
        _run(user, pg_ctl, "-D", data, "-l", log, "-w", "-o", " ".join(options), "start",
             log=log)  # fmt: skip
        try:
            psql = POSTGRES_BIN / "psql"
            _run(user, psql, "-d", server.conninfo, "-v", "ON_ERROR_STOP=1", "-qc",
                 "CREATE EXTENSION vector")  # fmt: skip
            yield server
        finally:
            _run(user, pg_ctl, "-D", data, "-m", "immediate", "-w", "stop")
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@contextmanager
def fresh_database(server: Server, name: str) -> Iterator[Server]:
    """A new database `name` on `server`, with pgvector, dropped afterwards: a test module's own,
    since both stores name their tables themselves (`langchain_pg_embedding`, `data_...`)."""
    psql = POSTGRES_BIN / "psql"
    on_server = ("-d", server.conninfo, "-v", "ON_ERROR_STOP=1", "-qc")
    _run(None, psql, *on_server, f'CREATE DATABASE "{name}"')  # the tests' name, not user input
    try:
        created = dataclasses.replace(server, dbname=name)
        _run(None, psql, "-d", created.conninfo, "-qc", "CREATE EXTENSION vector")
        yield created
    finally:
        _run(None, psql, *on_server, f'DROP DATABASE "{name}" WITH (FORCE)')


def _pg_config(option: str) -> str:
    return subprocess.run(
        [POSTGRES_BIN / "pg_config", option], capture_output=True, text=True, check=True
    ).stdout.strip()


def _free_port() -> int:
    """A port nothing listens on now; the server binds it a moment later."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _run(user: str | None, program: Path, *arguments: object, log: Path | None = None) -> None:
    """Run a server program (as `user`), raising `NoServerError` with its last words: the
    last line it printed, or of the server `log` it names."""
    done = subprocess.run(
        [program, *map(str, arguments)], user=user, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        said = done.stderr or done.stdout
        if log is not None and log.exists():
            said = log.read_text(errors="replace")
        raise NoServerError(f"{program.name} failed: {_last_line_of(said)}")


def _last_line_of(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else "(no output)"
