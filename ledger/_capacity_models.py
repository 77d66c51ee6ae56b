"""Capacity tables: slot counters and holds, day quotas, rate buckets, the deferred queue, breakers.

Owned by migrations 0008, 0011 and 0014 (at most one waiting deferred item per tenant and work key). A run holds one row in ``capacity_holds`` per counter it counts
against (global, tenant, concurrency key) from admission until it ends; the counter's
``active`` always moves in the same transaction as its holds.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, DateTime, Index, text
from sqlmodel import Field, SQLModel


def _ts(**kw: Any) -> Any:
    return Field(sa_type=DateTime(timezone=True), **kw)


class CapacityCounter(SQLModel, table=True):
    __tablename__ = "capacity_counters"

    key: str = Field(primary_key=True, max_length=600)
    active: int = 0
    updated_at: datetime | None = _ts(default=None, nullable=True)
    """Last raised or lowered (migration 0011): an idle counter is pruned by retention."""


class CapacityHold(SQLModel, table=True):
    __tablename__ = "capacity_holds"
    __table_args__ = (Index("ix_capacity_holds_slot", "slot_key"),)

    work_key: str = Field(primary_key=True, max_length=512)
    slot_key: str = Field(primary_key=True, max_length=600)
    tenant: str = Field(max_length=128)
    generation: int = 0
    acquired_at: datetime = _ts()


class AdmissionCount(SQLModel, table=True):
    __tablename__ = "admission_counts"

    tenant: str = Field(primary_key=True, max_length=128)
    day: str = Field(primary_key=True, max_length=10)
    count: int = 0


class RateBucket(SQLModel, table=True):
    __tablename__ = "rate_buckets"

    key: str = Field(primary_key=True, max_length=300)
    tokens: float
    updated_at: datetime = _ts()


class DeferredItem(SQLModel, table=True):
    """Work deferred for capacity, waiting durably for the dispatcher."""

    __tablename__ = "deferred_items"
    __table_args__ = (
        Index("ix_deferred_status_due", "status", "next_attempt_at"),
        Index("ix_deferred_work_key", "work_key", "status"),
        Index("ix_deferred_tenant", "tenant", "status"),
        Index("ix_deferred_updated_at", "updated_at"),
        Index("ux_deferred_waiting", "tenant", "work_key", unique=True,
              sqlite_where=text("status = 'waiting'"), postgresql_where=text("status = 'waiting'")),
    )

    id: str = Field(primary_key=True, max_length=40)
    enqueued_at: datetime = _ts()
    updated_at: datetime = _ts()
    tenant: str = Field(max_length=128)
    source: str = Field(max_length=128)
    priority: int = 3
    work_key: str = Field(max_length=512)
    input_version: str | None = Field(default=None, max_length=128)
    status: str = Field(max_length=16)
    """``waiting`` | ``admitted`` | ``dropped`` (rejected when re-checked) | ``superseded`` | ``dead``."""
    blocked_on: str = Field(max_length=32)
    blocked_key: str | None = Field(default=None, max_length=600)
    next_attempt_at: datetime = _ts()
    attempts: int = 0
    failures: int = 0
    last_error: str | None = None
    receipt_id: str = Field(max_length=40)
    """The defer receipt; the admission (or drop) writes its own."""
    final_receipt_id: str | None = Field(default=None, max_length=40)
    payload: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))


class Breaker(SQLModel, table=True):
    __tablename__ = "breakers"

    provider: str = Field(primary_key=True, max_length=128)
    failures: int = 0
    window_start: datetime | None = _ts(default=None, nullable=True)
    opened_at: datetime | None = _ts(default=None, nullable=True)
    last_error: str | None = None
    updated_at: datetime = _ts()
