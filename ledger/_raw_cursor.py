"""One statement on a connection's DBAPI cursor, its driver errors raised as SQLAlchemy's.

The hottest reads (``ledger/_repeats.py``, the inline kill read in ``ledger/_kills.py``) and the accept's
statements (``ledger/_prepared.py``) skip SQLAlchemy's statement machinery and run on the driver's
cursor. The driver then raises its own exceptions (``sqlite3.OperationalError``,
``psycopg.OperationalError``), which are not SQLAlchemy's: the webhook API's ledger-down handler
(``webhook_api._responses.LEDGER_DOWN``) never saw them, and a lost PostgreSQL connection or an
unreadable SQLite file was answered 500 instead of 503 with Retry-After. Wrapped here the way
SQLAlchemy wraps them itself (``DBAPIError.instance``: the same subclass, ``.orig`` the driver's
exception).

The connection's ``before_cursor_execute`` / ``after_cursor_execute`` listeners, if any, are called
around the statement as SQLAlchemy calls them: one after another, each given what the one before
returned (a ``retval=True`` listener may rewrite the statement or its parameters, as sqlcommenter does),
with a plain attribute holder standing for the execution context (a tracing listener keeps its span on
it). What observes or orders statements by their text (the race tests'
``tests/support/pause_at_statement.py``) sees these too. Without a listener this costs a truth test each.

A driver error that means the connection is gone (``dialect.is_disconnect``) invalidates the connection
first, as SQLAlchemy does, so the pool does not hand the broken one out again.

Given up against SQLAlchemy's own path, on purpose (the cost this module exists to avoid): the
``handle_error`` event, echo logging of these statements, ``StatementError`` wrapping of a bind
processor's own error (it reaches the caller as the processor raised it), and a full execution context.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import SimpleNamespace
from typing import Any, TypeVar

from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

T = TypeVar("T")


def run_raw(conn: Connection, statement: str, params: Mapping[str, Any] | Sequence[Any],
            fetch: Callable[[Any], T]) -> T:
    """``fetch(cursor)`` after ``statement`` ran on ``conn``'s DBAPI cursor; driver errors as SQLAlchemy's."""
    return _on_cursor(conn, statement, params, False, fetch)


def run_raw_many(conn: Connection, statement: str, params: Sequence[Mapping[str, Any] | Sequence[Any]]) -> None:
    """``statement`` once per parameter set (the driver's ``executemany``) on ``conn``'s DBAPI cursor;
    driver errors as SQLAlchemy's."""
    _on_cursor(conn, statement, params, True, lambda cursor: None)


def _on_cursor(conn: Connection, statement: str, params: Any, many: bool, fetch: Callable[[Any], T]) -> T:
    driver = conn.connection.driver_connection
    assert driver is not None  # a checked-out connection has its DBAPI connection
    dbapi_error = conn.dialect.loaded_dbapi.Error
    dispatch = conn.dispatch
    cursor = None
    try:
        cursor = driver.cursor()
        try:
            context = SimpleNamespace(executemany=many) if dispatch.before_cursor_execute or \
                dispatch.after_cursor_execute else None
            for before in dispatch.before_cursor_execute:  # each sees what the one before returned
                statement, params = before(conn, cursor, statement, params, context, many)
            if many:
                cursor.executemany(statement, params)
            else:
                cursor.execute(statement, params)
            for after in dispatch.after_cursor_execute:
                after(conn, cursor, statement, params, context, many)
            return fetch(cursor)
        finally:
            cursor.close()
    except dbapi_error as exc:
        gone = conn.dialect.is_disconnect(exc, driver, cursor)
        if gone and not conn.closed:
            conn.invalidate(exc)
        raise DBAPIError.instance(statement, params, exc, dbapi_error, dialect=conn.dialect,
                                  connection_invalidated=gone) from exc
