"""Engine construction for the ledger: SQLite (embedded default) or PostgreSQL.

SQLite is shared by the API and worker processes, so it runs in WAL mode with a busy
timeout; without them a concurrent writer gets ``database is locked`` at once.
PostgreSQL URLs written as ``postgresql://`` or ``postgres://`` use psycopg 3.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlmodel import create_engine

from ledger._raw_cursor import run_raw


READ_ONLY = "sluicegate_read_only"
"""Execution option of a :func:`single_read` connection (SQLite: no ``BEGIN IMMEDIATE``)."""
READ_SNAPSHOT = "sluicegate_read_snapshot"
"""Execution option of a :func:`snapshot_read` connection (SQLite: a deferred ``BEGIN``, no write lock)."""


def single_read(engine: Engine) -> Connection:
    """A connection for ONE read-only statement, which is consistent by itself: on SQLite no
    ``BEGIN IMMEDIATE`` (no write lock, no queueing behind writers), on PostgreSQL autocommit (no
    ``BEGIN``/``ROLLBACK`` round trips). Never write through it."""
    conn = engine.connect()
    if engine.dialect.name == "sqlite":
        return conn.execution_options(**{READ_ONLY: True})
    return conn.execution_options(isolation_level="AUTOCOMMIT")


def snapshot_read(engine: Engine) -> Connection:
    """A connection for a few read-only statements that must agree with each other: on SQLite a
    deferred ``BEGIN`` (in WAL mode, one read snapshot for the whole transaction; no write lock, so
    no queueing behind writers); on PostgreSQL an ordinary transaction, as a ``Session`` opens.
    Never write through it: on SQLite a deferred transaction that writes can fail with
    ``database is locked``."""
    conn = engine.connect()
    if engine.dialect.name == "sqlite":
        return conn.execution_options(**{READ_SNAPSHOT: True})
    return conn


def _no_rows(_cursor: object) -> None:
    return None


def normalize_url(url: str) -> str:
    """Map conventional Postgres URLs onto the psycopg 3 driver."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


def make_engine(url: str) -> Engine:
    """Create an engine for ``url``; creates the SQLite file's directory if needed."""
    url = normalize_url(url)
    if url.startswith("sqlite"):
        path = url.removeprefix("sqlite:///")
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record):  # pragma: no cover - trivial
            # Let SQLAlchemy, not pysqlite, issue BEGIN (see _sqlite_begin).
            dbapi_conn.isolation_level = None
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            # NORMAL in WAL mode: a commit is durable against a process crash (the WAL is written
            # before the commit returns); only an OS crash or power loss can lose the last commits,
            # never corrupt the file. FULL would fsync the WAL on every commit.
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()

        @event.listens_for(engine, "begin")
        def _sqlite_begin(conn):  # pragma: no cover - trivial
            # Take the write lock up front: a deferred transaction that reads and then
            # writes fails with "database is locked" when another process wrote meanwhile.
            # A READ_ONLY connection runs single read statements: no BEGIN at all (each statement
            # is its own WAL snapshot, no lock), so hot read-only checks never queue behind writers.
            # A READ_SNAPSHOT connection reads a few statements in one deferred transaction (a WAL
            # snapshot, no write lock).
            # On the DBAPI cursor (ledger/_raw_cursor.py: errors and cursor events as SQLAlchemy's): every
            # ledger transaction opens here, and exec_driver_sql's execution context cost several times
            # SQLite's own work (profiled: ~0.1 ms per transaction, two per admission).
            options = conn.get_execution_options()
            if options.get(READ_SNAPSHOT):
                run_raw(conn, "BEGIN", (), _no_rows)
            elif not options.get(READ_ONLY):
                run_raw(conn, "BEGIN IMMEDIATE", (), _no_rows)

        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)
