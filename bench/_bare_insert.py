"""The duplicate-rejects baseline: one ``INSERT ... ON CONFLICT DO NOTHING`` of a fresh row per
transaction into ``bench_bare_deliveries`` (shaped like ``deliveries``), through the ledger's engine."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy import Column, DateTime, MetaData, String, Table, bindparam, func, select, text
from sqlalchemy.engine import Engine

_meta = MetaData()
BARE = Table("bench_bare_deliveries", _meta,
             Column("source", String(128), primary_key=True), Column("delivery_id", String(256), primary_key=True),
             Column("received_at", DateTime(timezone=True), nullable=False),
             Column("receipt_id", String(40), nullable=False))
BARE_INSERT = text(
    "INSERT INTO bench_bare_deliveries (source, delivery_id, received_at, receipt_id) "
    "VALUES (:source, :delivery_id, :received_at, :receipt_id) ON CONFLICT DO NOTHING"
).bindparams(bindparam("received_at", type_=DateTime(timezone=True)))


def create_table(engine: Engine) -> None:
    _meta.create_all(engine)


def bare_insert(engine: Engine, source: str):
    """One operation of the baseline: insert one fresh row in its own transaction."""
    async def step() -> None:
        with engine.begin() as conn:
            conn.execute(BARE_INSERT, {"source": source, "delivery_id": uuid.uuid4().hex,
                                       "received_at": datetime.now(UTC), "receipt_id": uuid.uuid4().hex})
    return step


def bare_rows(engine: Engine) -> int:
    with engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(BARE)).scalar_one()
