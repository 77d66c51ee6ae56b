"""``InlineReader`` (``ledger/_inline_read.py``): one SQLite connection kept open between reads on the
event loop, which must never keep a snapshot (a write committed after a read is seen by the next one)
and must recover from a locked database. Real SQLite files; the lock is a second sqlite3 connection's."""

from __future__ import annotations

import gc
import sqlite3
import weakref
from pathlib import Path

import pytest
from sqlalchemy import text

from ledger._inline_read import InlineReader
from ledger._raw_cursor import run_raw
from sqlmodel import create_engine


def _database(tmp_path: Path, journal: str = "WAL") -> tuple[Path, InlineReader]:
    path = tmp_path / "inline.sqlite"
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA journal_mode={journal}")
        db.execute("CREATE TABLE t (x INTEGER)")
    reader = InlineReader.for_engine(create_engine(f"sqlite:///{path}"))
    assert reader is not None
    return path, reader


def _count_raw(conn) -> int:
    return run_raw(conn, "SELECT count(*) FROM t", [], lambda cursor: cursor.fetchone()[0])


def _count_orm(conn) -> int:
    return conn.execute(text("SELECT count(*) FROM t")).scalar_one()  # SQLAlchemy autobegins here


def test_one_connection_is_kept_and_every_read_sees_what_was_committed_since(tmp_path: Path) -> None:
    path, reader = _database(tmp_path)
    seen = []
    for n in range(1, 4):
        with sqlite3.connect(path) as writer:
            writer.execute("INSERT INTO t VALUES (?)", (n,))
        assert reader.run(_count_raw) == n and reader.run(_count_orm) == n  # no snapshot kept by either
        seen.append(reader.run(lambda conn: conn))
    assert all(conn is seen[0] for conn in seen)  # one Connection kept, not checked out per read
    reader.close()


def test_a_locked_database_answers_none_and_the_next_read_works(tmp_path: Path) -> None:
    path, reader = _database(tmp_path, "DELETE")  # rollback journal: an exclusive writer keeps readers out
    assert reader.run(_count_raw) == 0 and reader.run(_count_orm) == 0
    writer = sqlite3.connect(path, isolation_level=None, timeout=0.5)
    writer.execute("BEGIN EXCLUSIVE")  # would fail if the kept connection still held a shared lock
    writer.execute("INSERT INTO t VALUES (1)")
    assert reader.run(_count_raw) is None and reader.run(_count_orm) is None  # busy: the caller uses a thread
    writer.execute("COMMIT")
    writer.close()
    assert reader.run(_count_raw) == 1 and reader.run(_count_orm) == 1
    reader.close()


def test_a_failed_read_opens_a_new_sqlite_connection_and_close_stops_reads(tmp_path: Path) -> None:
    """A read that failed (not busy: here a missing table) drops the SQLite handle itself, not only
    SQLAlchemy's wrapper around it (``StaticPool`` would hand the same one back); after ``close`` every
    read answers None, so the caller's normal path answers."""
    _, reader = _database(tmp_path)
    first = reader.run(lambda conn: conn.connection.driver_connection)
    try:
        reader.run(lambda conn: run_raw(conn, "SELECT * FROM missing", [], lambda cursor: cursor.fetchall()))
    except Exception:  # noqa: BLE001 - the failed read's own error; what follows is what is tested
        pass
    again = reader.run(lambda conn: conn.connection.driver_connection)
    assert again is not None and again is not first
    assert reader.run(_count_raw) == 0
    reader.close()
    assert reader.run(_count_raw) is None


def test_no_driver_transaction_outlives_a_read(tmp_path: Path) -> None:
    """Even a statement that writes leaves no transaction (nor SQLite's write lock) behind on the kept
    connection: the driver runs in autocommit; a writer elsewhere gets the database at once."""
    path, reader = _database(tmp_path)
    reader.run(lambda conn: run_raw(conn, "INSERT INTO t VALUES (1)", [], lambda cursor: None))
    assert reader.run(lambda conn: conn.connection.driver_connection.in_transaction) is False
    with sqlite3.connect(path, timeout=0.05) as writer:
        writer.execute("INSERT INTO t VALUES (2)")
    assert reader.run(_count_raw) == 2


def test_disposing_the_ledger_engine_closes_the_kept_connection(tmp_path: Path) -> None:
    path = tmp_path / "inline.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE t (x INTEGER)")
    engine = create_engine(f"sqlite:///{path}")
    reader = InlineReader.for_engine(engine)
    assert reader is not None
    kept = reader.run(lambda conn: conn.connection.dbapi_connection)  # the driver connection a read used
    assert reader.run(_count_raw) == 0
    engine.dispose()  # the API's shutdown (services.resources.open_ledger)
    with pytest.raises(sqlite3.ProgrammingError):
        kept.execute("SELECT 1")  # closed: "Cannot operate on a closed database"
    assert reader.run(_count_raw) == 0  # a later read opens a new connection


def test_readers_made_and_dropped_per_call_leave_nothing_on_the_engine(tmp_path: Path) -> None:
    """Stores built per call (a ``KillSwitch`` per goal activity or console request) each make a reader:
    the engine keeps one disposal listener, and a dropped reader is freed with its store."""
    path = tmp_path / "inline.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE t (x INTEGER)")
    engine = create_engine(f"sqlite:///{path}")
    readers = [InlineReader.for_engine(engine) for _ in range(50)]
    assert readers[0] is not None and readers[0].run(_count_raw) == 0
    dropped = weakref.ref(readers[0])
    del readers
    gc.collect()
    assert dropped() is None
    assert len(engine.dispatch.engine_disposed) == 1
