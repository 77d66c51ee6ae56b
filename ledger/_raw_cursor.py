"""One statement on a connection's DBAPI cursor, its driver errors raised as SQLAlchemy's.

The hottest reads (``ledger/_repeats.py``, the inline kill read in ``ledger/_kills.py``) skip
SQLAlchemy's statement machinery and run on the driver's cursor. The driver then raises its own
exceptions (``sqlite3.OperationalError``, ``psycopg.OperationalError``), which are not
SQLAlchemy's: the webhook API's ledger-down handler (``webhook_api._responses.LEDGER_DOWN``) never
saw them, and a lost PostgreSQL connection or an unreadable SQLite file was answered 500 instead
of 503 with Retry-After. Wrapped here the way SQLAlchemy wraps them itself
(``DBAPIError.instance``: the same subclass, ``.orig`` the driver's exception).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

T = TypeVar("T")


def run_raw(conn: Connection, statement: str, params: Mapping[str, Any] | Sequence[Any],
            fetch: Callable[[Any], T]) -> T:
    """``fetch(cursor)`` after ``statement`` ran on ``conn``'s DBAPI cursor; driver errors as SQLAlchemy's."""
    driver = conn.connection.driver_connection
    assert driver is not None  # a checked-out connection has its DBAPI connection
    dbapi_error = conn.dialect.loaded_dbapi.Error
    try:
        cursor = driver.cursor()
        try:
            cursor.execute(statement, params)
            return fetch(cursor)
        finally:
            cursor.close()
    except dbapi_error as exc:
        raise DBAPIError.instance(statement, params, exc, dbapi_error, dialect=conn.dialect) from exc
