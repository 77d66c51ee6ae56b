"""Small SQL helpers shared by the ledger stores: portable upserts and the clock."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from collections.abc import Callable
from typing import Any, cast, overload

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, CursorResult, Result
from sqlmodel import Session


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    return uuid.uuid4().hex


@overload
def as_utc(value: datetime) -> datetime: ...
@overload
def as_utc(value: None) -> None: ...
def as_utc(value: datetime | None) -> datetime | None:
    """SQLite hands timestamps back naive; they were written as UTC."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


def _insert(dialect_name: str):
    return postgresql.insert if dialect_name == "postgresql" else sqlite.insert


def dialect_insert(session: Session, model):
    """``INSERT`` supporting ``on_conflict_*`` for the session's dialect (SQLite or PostgreSQL)."""
    return _insert(session.get_bind().dialect.name)(model)


def insert_for(conn: Connection, model):
    """:func:`dialect_insert` for a Core connection's dialect."""
    return _insert(conn.dialect.name)(model)


def insert_per_dialect(model, build: Callable[[Any], Any]) -> dict[str, Any]:
    """``build(insert)`` of ``model`` once per ledger dialect, keyed by dialect name: an ``on_conflict_*``
    statement built at import and picked by ``conn.dialect.name`` on the hot path."""
    return {name: build(_insert(name)(model)) for name in ("sqlite", "postgresql")}


def rowcount(result: Result[Any]) -> int:
    """Rows an UPDATE or DELETE matched (``Session.execute`` types its result as a plain ``Result``)."""
    return cast(CursorResult[Any], result).rowcount  # a DML statement's result is a CursorResult
