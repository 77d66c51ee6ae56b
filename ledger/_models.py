"""Ledger tables: receipts, deliveries, work items and versions, side effects.

The schema is owned by the Alembic migrations in ``ledger/migrations``; these models
must match them (``tests/ledger/test_migrations.py`` compares the two).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, DateTime, Index
from sqlmodel import Field, SQLModel


def _ts(**kw: Any) -> Any:
    """A timezone-aware timestamp column (timestamptz on PostgreSQL)."""
    return Field(sa_type=DateTime(timezone=True), **kw)


class Receipt(SQLModel, table=True):
    """One admission decision and the identity bundle known when it was made."""

    __tablename__ = "receipts"
    __table_args__ = (
        Index("ix_receipts_work_key", "work_key"),
        Index("ix_receipts_delivery", "source", "delivery_id"),
        Index("ix_receipts_created_at", "created_at"),
        Index("ix_receipts_reject_digest", "source", "reject_digest"),
    )

    id: str = Field(primary_key=True, max_length=40)
    created_at: datetime = _ts()
    outcome: str = Field(max_length=16)
    reason: str = Field(max_length=64)
    message: str = ""
    retry_after_seconds: float | None = None
    # delivery
    trigger_kind: str = Field(max_length=16)
    source: str = Field(max_length=128)
    delivery_id: str | None = Field(default=None, max_length=256)
    event_type: str | None = Field(default=None, max_length=128)
    subject: str | None = Field(default=None, max_length=512)
    emitted_at: datetime | None = _ts(default=None)
    received_at: datetime = _ts()
    actor: str | None = Field(default=None, max_length=128)
    # domain
    tenant: str | None = Field(default=None, max_length=128)
    work_key: str | None = Field(default=None, max_length=512)
    target_id: str | None = Field(default=None, max_length=512)
    input_version: str | None = Field(default=None, max_length=128)
    policy_version: str | None = Field(default=None, max_length=64)
    # execution
    workflow_id: str | None = Field(default=None, max_length=600)
    run_id: str | None = Field(default=None, max_length=64)
    generation: int | None = None
    concurrency_key: str | None = Field(default=None, max_length=600)
    """The capacity planner's concurrency key for the work (migration 0016; None: no key, or older)."""
    activity_attempt: int | None = None
    """The activity attempt that wrote this receipt (scans, goals, the dispatcher); None outside one."""
    # mutation
    operation_keys: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    external_ids: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    override: str | None = Field(default=None, max_length=256)
    """A check an authorized actor overrode, and why (e.g. ``rerun-done: flaky review``)."""
    reject_digest: str | None = Field(default=None, max_length=64)
    """The content digest of a verified body rejected before intake (migration 0018): a repeat of it
    is answered from this receipt with no row (:meth:`ledger.SqlIntakeStore.record_reject`)."""


class Delivery(SQLModel, table=True):
    """A delivery id seen from a source; written with the receipt that decided it."""

    __tablename__ = "deliveries"
    __table_args__ = (Index("ix_deliveries_received_at", "received_at"),
                      Index("ux_deliveries_body_digest", "source", "body_digest", unique=True))

    source: str = Field(primary_key=True, max_length=128)
    delivery_id: str = Field(primary_key=True, max_length=256)
    received_at: datetime = _ts()
    receipt_id: str = Field(max_length=40)
    body_digest: str | None = Field(default=None, max_length=64)
    """sha256 of the signed content less the delivery id (webhooks only): the same digest under
    another delivery id from the same source is a replay. Pruned with the delivery id."""


class WorkItem(SQLModel, table=True):
    """A unit of domain work; ``generation`` is the fencing token bumped on every admission."""

    __tablename__ = "work_items"

    work_key: str = Field(primary_key=True, max_length=512)
    tenant: str = Field(max_length=128)
    target_id: str = Field(max_length=512)
    generation: int = 0
    current_version: str | None = Field(default=None, max_length=128)
    status: str = Field(max_length=16)
    workflow_id: str | None = Field(default=None, max_length=600)
    updated_at: datetime = _ts()
    reset_at: datetime | None = _ts(default=None)
    """Tombstone: the domain was reset (e.g. the pull request closed); versions finished
    before it no longer block a new admission."""


class WorkVersion(SQLModel, table=True):
    """One input version of a work item and what became of it."""

    __tablename__ = "work_versions"
    __table_args__ = (Index("ix_work_versions_status", "status"),)

    work_key: str = Field(primary_key=True, max_length=512)
    input_version: str = Field(primary_key=True, max_length=128)
    generation: int
    status: str = Field(max_length=16)
    receipt_id: str = Field(max_length=40)
    workflow_id: str | None = Field(default=None, max_length=600)
    run_id: str | None = Field(default=None, max_length=64)
    result: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    updated_at: datetime = _ts()
    readmissions: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    """Times this version was admitted again after it had ended (bounded by intake's limit)."""


class SideEffect(SQLModel, table=True):
    """An external mutation keyed by its operation key (never by attempt)."""

    __tablename__ = "side_effects"
    __table_args__ = (Index("ix_side_effects_work_key", "work_key"), Index("ix_side_effects_updated_at", "updated_at"))

    operation_key: str = Field(primary_key=True, max_length=128)
    work_key: str = Field(max_length=512)
    operation: str = Field(max_length=128)
    target_version: str = Field(max_length=128)
    generation: int
    status: str = Field(max_length=16)
    attempts: int = 0
    external_id: str | None = Field(default=None, max_length=256)
    result: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    error: str | None = None
    created_at: datetime = _ts()
    updated_at: datetime = _ts()
    # identity of the attempt that last claimed the operation, and of its admission (migration 0016)
    workflow_id: str | None = Field(default=None, max_length=600)
    run_id: str | None = Field(default=None, max_length=64)
    activity_attempt: int | None = None
    concurrency_key: str | None = Field(default=None, max_length=600)
    policy_version: str | None = Field(default=None, max_length=64)
