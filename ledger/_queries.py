"""Read-only operator queries: filtered receipts, and the chain behind a delivery or work key
(decisions, runs, side effects, and what each model call cost: its day-budget reservations)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import or_
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from ledger._budgets import BudgetReservation
from ledger._models import Receipt, SideEffect, WorkItem, WorkVersion


@dataclass
class ReceiptFilter:
    work_key: str | None = None
    outcome: str | None = None
    reason: str | None = None
    source: str | None = None
    delivery_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    limit: int = 50


@dataclass
class Chain:
    """Deliveries → decisions → runs → side effects for one work key (or one delivery's key)."""

    query: str
    work_keys: list[str] = field(default_factory=list)
    receipts: list[Receipt] = field(default_factory=list)
    items: list[WorkItem] = field(default_factory=list)
    versions: list[WorkVersion] = field(default_factory=list)
    side_effects: list[SideEffect] = field(default_factory=list)
    reservations: list[BudgetReservation] = field(default_factory=list)
    """One per model-call attempt: how it ended and what it was charged."""


def list_receipts(engine: Engine, f: ReceiptFilter) -> list[Receipt]:
    query = select(Receipt).order_by(col(Receipt.created_at).desc()).limit(f.limit)
    for column, value in ((Receipt.work_key, f.work_key), (Receipt.outcome, f.outcome), (Receipt.reason, f.reason),
                          (Receipt.source, f.source), (Receipt.delivery_id, f.delivery_id)):
        if value is not None:
            query = query.where(column == value)
    if f.since is not None:
        query = query.where(Receipt.created_at >= f.since)
    if f.until is not None:
        query = query.where(Receipt.created_at < f.until)
    with Session(engine) as s:
        return list(s.exec(query).all())


def explain(engine: Engine, key_or_delivery: str) -> Chain:
    """Everything the ledger knows about a work key, or about the work key(s) a delivery named."""
    chain = Chain(query=key_or_delivery)
    with Session(engine) as s:
        named = s.exec(select(Receipt.work_key).where(Receipt.delivery_id == key_or_delivery)).all()
        as_key = s.exec(select(Receipt.work_key).where(Receipt.work_key == key_or_delivery).limit(1)).first()
        known = s.get(WorkItem, key_or_delivery) is not None or as_key is not None  # rejected-only keys too
        keys = sorted({k for k in named if k} | ({key_or_delivery} if known else set()))
        chain.work_keys = keys
        chain.receipts = list(s.exec(select(Receipt).where(or_(
            col(Receipt.work_key).in_(keys), col(Receipt.delivery_id) == key_or_delivery))
                                .order_by(col(Receipt.created_at))))
        chain.items = list(s.exec(select(WorkItem).where(col(WorkItem.work_key).in_(keys))))
        chain.versions = list(s.exec(select(WorkVersion).where(col(WorkVersion.work_key).in_(keys))
                                     .order_by(col(WorkVersion.generation))))
        chain.side_effects = list(s.exec(select(SideEffect).where(col(SideEffect.work_key).in_(keys))
                                         .order_by(col(SideEffect.created_at))))
        chain.reservations = list(s.exec(select(BudgetReservation).where(col(BudgetReservation.work_key).in_(keys))
                                          .order_by(col(BudgetReservation.created_at))))
    return chain
