"""Engine construction for the ledger: SQLite (embedded default) or PostgreSQL.

SQLite is shared by the API and worker processes, so it runs in WAL mode with a busy
timeout; without them a concurrent writer gets ``database is locked`` at once.
PostgreSQL URLs written as ``postgresql://`` or ``postgres://`` use psycopg 3.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlmodel import create_engine


READ_ONLY = "sluicegate_read_only"
"""Execution option for a connection that only reads (``engine.connect().execution_options(**{READ_ONLY: True})``):
on SQLite it begins a deferred transaction instead of ``BEGIN IMMEDIATE``."""


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
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()

        @event.listens_for(engine, "begin")
        def _sqlite_begin(conn):  # pragma: no cover - trivial
            # Take the write lock up front: a deferred transaction that reads and then
            # writes fails with "database is locked" when another process wrote meanwhile.
            # A connection marked READ_ONLY never writes: a deferred BEGIN (a WAL snapshot, no
            # lock) lets the hot read-only checks run beside writers instead of queueing behind them.
            conn.exec_driver_sql("BEGIN" if conn.get_execution_options().get(READ_ONLY) else "BEGIN IMMEDIATE")

        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)
