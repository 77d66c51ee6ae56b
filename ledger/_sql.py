"""Small SQL helpers shared by the ledger stores: portable upserts and the clock."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
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


def dialect_insert(session: Session, model):
    """``INSERT`` supporting ``on_conflict_*`` for the session's dialect (SQLite or PostgreSQL)."""
    name = session.get_bind().dialect.name
    return (postgresql.insert if name == "postgresql" else sqlite.insert)(model)


def insert_for(conn: Connection, model):
    """:func:`dialect_insert` for a Core connection's dialect."""
    return (postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert)(model)


def rowcount(result: Result[Any]) -> int:
    """Rows an UPDATE or DELETE matched (``Session.execute`` types its result as a plain ``Result``)."""
    return cast(CursorResult[Any], result).rowcount  # a DML statement's result is a CursorResult
