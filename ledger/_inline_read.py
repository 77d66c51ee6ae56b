"""Reads the API may run on its event loop: SQLite only, never waiting on a lock or the pool.

``intake.repeats.look_up`` answers the early repeat check inline on SQLite (one indexed statement,
less than a thread hop). Run through the shared engine it could stall the whole API: the pool
checkout waits up to 30 s for a free connection and ``busy_timeout`` is 30 s behind a writer that
holds the database. :class:`InlineReader` keeps ONE connection of its own (no pool to wait for,
opened on first use) with a busy timeout of :data:`INLINE_BUSY_MS`, guarded by a lock taken without
waiting. :meth:`InlineReader.run` returns ``None`` whenever it cannot answer at once (the connection
in use, the database busy or locked): the caller then runs the normal path in a worker thread. The
kept connection is closed with the ledger engine (``Engine.dispose``).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from typing import TypeVar
from weakref import WeakKeyDictionary, WeakSet

from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import StaticPool
from sqlmodel import create_engine

INLINE_BUSY_MS = 20
"""How long an inline read waits for a lock before giving up (the normal path then waits in a thread)."""

_SQLITE_BUSY, _SQLITE_LOCKED = 5, 6
T = TypeVar("T")


def is_busy(exc: Exception) -> bool:
    """``database is locked``/``busy`` (SQLITE_BUSY, SQLITE_LOCKED and their extended codes), raised by
    SQLAlchemy or by the driver itself (a read on the DBAPI cursor, ``ledger/_repeats.py``)."""
    code = getattr(getattr(exc, "orig", exc), "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED)


_READERS: WeakKeyDictionary[Engine, WeakSet[InlineReader]] = WeakKeyDictionary()
"""The live readers of each ledger engine. Weak both ways: stores built per call (a ``KillSwitch`` in a
goal activity or a console request) come and go, and must leave no listener nor reader behind."""
_READERS_LOCK = threading.Lock()


def _track(engine: Engine, reader: InlineReader) -> None:
    """Disposing the ledger engine (the API's shutdown: ``services.resources.open_ledger``) closes the
    kept connection of each of its live readers; a later read opens a new one, as after a failed read.
    One ``engine_disposed`` listener per engine, whatever the number of readers made on it."""
    with _READERS_LOCK:
        readers = _READERS.get(engine)
        if readers is None:
            readers = _READERS[engine] = WeakSet()
            event.listen(engine, "engine_disposed", _on_disposed)
        readers.add(reader)


def _on_disposed(engine: Engine) -> None:
    with _READERS_LOCK:
        readers = list(_READERS.get(engine, ()))
    for reader in readers:
        reader.drop_connection()


class InlineReader:
    """One dedicated SQLite connection for reads on the event loop; :meth:`run` never blocks for long."""

    def __init__(self, engine: Engine) -> None:
        self._url = engine.url
        self._engine: Engine | None = None
        self._conn: Connection | None = None
        """Kept open between reads: checking a connection out and back in (the pool's reset, a
        ``rollback``) cost more than the read itself (~1.5% of the API's GIL time under admissions,
        py-spy 2026-12-01). No snapshot or lock outlives a read: the driver runs in autocommit
        (``isolation_level=None``: it never begins a transaction of its own, not even for a statement
        that writes), every read closes its cursor (``run_raw``, ``Result.first``), and anything
        SQLAlchemy began is rolled back at once."""
        self._lock = threading.Lock()
        self._closed = False
        _track(engine, self)

    @staticmethod
    def for_engine(engine: Engine) -> InlineReader | None:
        """A reader for a file-backed SQLite engine; None otherwise (PostgreSQL, in-memory SQLite)."""
        database = engine.url.database
        if engine.dialect.name != "sqlite" or not database or database == ":memory:":
            return None
        return InlineReader(engine)

    def _connection(self) -> Connection:
        if self._conn is None:
            if self._engine is None:
                self._engine = create_engine(self._url, poolclass=StaticPool, connect_args={
                    "check_same_thread": False, "timeout": INLINE_BUSY_MS / 1000, "isolation_level": None})
            self._conn = self._engine.connect()
        return self._conn

    def _drop(self) -> None:
        """Forget the kept connection and its engine after a failed read: the next read opens a new
        SQLite connection (closing the kept one alone would hand the same handle back: ``StaticPool``)."""
        conn, self._conn = self._conn, None
        engine, self._engine = self._engine, None
        try:
            if conn is not None:
                conn.close()
            if engine is not None:
                engine.dispose()
        except Exception:  # noqa: BLE001 - already failed; the read's own error is what matters
            pass

    def drop_connection(self) -> None:
        """Close the kept connection (its engine was disposed); the next read opens a new one."""
        with self._lock:
            self._drop()

    def run(self, read: Callable[[Connection], T]) -> T | None:
        """``read(conn)`` at once, or None: the connection is in use, or the database busy or locked."""
        if not self._lock.acquire(blocking=False):
            return None
        try:
            if self._closed:  # closed: the caller's normal path answers
                return None
            conn = self._connection()
            try:
                return read(conn)
            finally:
                if conn.in_transaction():
                    conn.rollback()  # a read through SQLAlchemy autobegins: end it, keep no snapshot
        except (OperationalError, sqlite3.OperationalError) as exc:
            if is_busy(exc):  # the connection is fine, the database was busy: keep it
                return None
            self._drop()
            raise
        except BaseException:
            self._drop()
            raise
        finally:
            self._lock.release()

    def close(self) -> None:
        """Close the kept connection; later reads answer None (the caller's normal path)."""
        with self._lock:
            self._closed = True
            self._drop()
