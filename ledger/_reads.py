"""Read-only queries for the operator console: pages of receipts, decision counts, spend, runs.

Nothing here writes. Every query is bounded (a ``limit``, a time window) and filtered by the
tenants the reader may see: ``tenants=None`` means every tenant, including rows that have
none (a reject decided before a tenant was known); a set means those tenants only.

Failure modes written against:

* Offset pagination skips or repeats rows while new receipts arrive: pages are keyset pages on
  ``(created_at, id)``, newest first, so the next page starts strictly after the last row shown.
* A page of a table that grows without bound: every query takes a limit; callers bound it.
* SQLite returns timestamps naive: everything returned is compared and bucketed as UTC text
  (SQLite) or in UTC (PostgreSQL), never in the server's local zone.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, func, literal_column, or_
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from ledger._budgets import BudgetDay
from ledger._dead_letters import DeadLetter
from ledger._kills import Kill
from ledger._models import Receipt, WorkItem, WorkVersion
from ledger._sql import as_utc

MAX_PAGE = 500
"""No query here returns more rows than this in one page, whatever the caller asks."""


@dataclass(frozen=True)
class ReceiptQuery:
    """Filters for :func:`receipts_page`; ``None`` leaves a filter out."""

    work_key: str | None = None
    tenant: str | None = None
    outcome: str | None = None
    reason: str | None = None
    source: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    visible: frozenset[str] | None = None
    """The tenants the reader may see; ``None``: all, including receipts without a tenant."""
    before: tuple[datetime, str] | None = None
    """Keyset cursor: only receipts strictly older than this ``(created_at, id)``."""
    limit: int = 50


@dataclass(frozen=True)
class ReceiptPage:
    rows: list[Receipt]
    next_cursor: tuple[datetime, str] | None
    """The cursor of the page after this one; ``None`` on the last page."""


def _visible(column, visible: Collection[str] | None):
    return None if visible is None else col(column).in_(sorted(visible))


def receipts_page(engine: Engine, q: ReceiptQuery) -> ReceiptPage:
    """One page of receipts, newest first, keyset-paginated on ``(created_at, id)``."""
    limit = max(1, min(q.limit, MAX_PAGE))
    query = select(Receipt).order_by(col(Receipt.created_at).desc(), col(Receipt.id).desc()).limit(limit + 1)
    for column, value in ((Receipt.work_key, q.work_key), (Receipt.tenant, q.tenant), (Receipt.outcome, q.outcome),
                          (Receipt.reason, q.reason), (Receipt.source, q.source)):
        if value is not None:
            query = query.where(column == value)
    if q.since is not None:
        query = query.where(Receipt.created_at >= q.since)
    if q.until is not None:
        query = query.where(Receipt.created_at < q.until)
    if (where := _visible(Receipt.tenant, q.visible)) is not None:
        query = query.where(where)
    if q.before is not None:
        at, rid = q.before
        query = query.where(or_(col(Receipt.created_at) < at, (col(Receipt.created_at) == at) & (col(Receipt.id) < rid)))
    with Session(engine, expire_on_commit=False) as s:
        rows = list(s.exec(query))
    more = len(rows) > limit
    rows = rows[:limit]
    return ReceiptPage(rows, (as_utc(rows[-1].created_at), rows[-1].id) if more else None)


def decision_counts(engine: Engine, since: datetime, visible: Collection[str] | None) -> list[tuple[str, str, int]]:
    """``(outcome, reason, receipts)`` decided since ``since``, most frequent first."""
    n = func.count().label("n")
    query = (select(Receipt.outcome, Receipt.reason, n).where(Receipt.created_at >= since)
             .group_by(Receipt.outcome, Receipt.reason).order_by(n.desc(), Receipt.outcome, Receipt.reason))
    if (where := _visible(Receipt.tenant, visible)) is not None:
        query = query.where(where)
    with Session(engine) as s:
        return [(o, r, int(c)) for o, r, c in s.exec(query)]


def decisions_by_hour(engine: Engine, since: datetime, visible: Collection[str] | None) -> list[tuple[str, str, int]]:
    """``(hour "YYYY-MM-DD HH" in UTC, outcome, receipts)`` since ``since``, oldest hour first."""
    if engine.dialect.name == "postgresql":
        hour: ColumnElement[Any] = func.to_char(func.timezone("UTC", Receipt.created_at),
                                                literal_column("'YYYY-MM-DD HH24'"))
    else:  # SQLite keeps UTC text: "YYYY-MM-DD HH:MM:SS..."
        hour = func.substr(Receipt.created_at, 1, 13)
    hour = hour.label("hour")
    query = (select(hour, Receipt.outcome, func.count()).where(Receipt.created_at >= since)
             .group_by(hour, Receipt.outcome).order_by(hour))
    if (where := _visible(Receipt.tenant, visible)) is not None:
        query = query.where(where)
    with Session(engine) as s:
        return [(str(h).replace("T", " "), o, int(c)) for h, o, c in s.exec(query)]


def budget_days(engine: Engine, days: Collection[str]) -> list[BudgetDay]:
    """The day-budget rows (``global`` and ``tenant:<name>``) of the given UTC days."""
    with Session(engine, expire_on_commit=False) as s:
        return list(s.exec(select(BudgetDay).where(col(BudgetDay.day).in_(sorted(days)))
                           .order_by(BudgetDay.day, BudgetDay.scope)))


def finished_runs(engine: Engine, since: datetime, visible: Collection[str] | None, limit: int = 1000,
                  tenant: str | None = None) -> list[tuple[WorkVersion, str]]:
    """Versions with a recorded outcome last updated since ``since``, with their tenant, newest first."""
    query = (select(WorkVersion, WorkItem.tenant).join(WorkItem, col(WorkItem.work_key) == WorkVersion.work_key)
             .where(col(WorkVersion.result).is_not(None), WorkVersion.updated_at >= since)
             .order_by(col(WorkVersion.updated_at).desc()).limit(max(1, min(limit, 10 * MAX_PAGE))))
    if (where := _visible(WorkItem.tenant, visible)) is not None:
        query = query.where(where)
    if tenant is not None:
        query = query.where(WorkItem.tenant == tenant)
    with Session(engine, expire_on_commit=False) as s:
        return [(v, t) for v, t in s.exec(query)]


def dead_letters_page(engine: Engine, status: str | None, visible: Collection[str] | None, *,
                      work_key: str | None = None, tenant: str | None = None, limit: int = 100) -> list[DeadLetter]:
    """Dead letters newest first, by status (``None``: any), tenant and work key."""
    query = select(DeadLetter).order_by(col(DeadLetter.created_at).desc()).limit(max(1, min(limit, MAX_PAGE)))
    for column, value in ((DeadLetter.status, status), (DeadLetter.work_key, work_key), (DeadLetter.tenant, tenant)):
        if value is not None:
            query = query.where(column == value)
    if (where := _visible(DeadLetter.tenant, visible)) is not None:
        query = query.where(where)
    with Session(engine, expire_on_commit=False) as s:
        return list(s.exec(query))


def open_dead_letter_counts(engine: Engine, visible: Collection[str] | None) -> list[tuple[str, str, int]]:
    """``(tenant, owner, open letters)``."""
    query = (select(DeadLetter.tenant, DeadLetter.owner, func.count()).where(DeadLetter.status == "open")
             .group_by(DeadLetter.tenant, DeadLetter.owner).order_by(DeadLetter.tenant, DeadLetter.owner))
    if (where := _visible(DeadLetter.tenant, visible)) is not None:
        query = query.where(where)
    with Session(engine) as s:
        return [(t, o, int(c)) for t, o, c in s.exec(query)]


def recent_kills(engine: Engine, limit: int = 100) -> list[Kill]:
    """Kills newest first, in force or lifted (the caller decides which scopes a reader sees)."""
    with Session(engine, expire_on_commit=False) as s:
        return list(s.exec(select(Kill).order_by(col(Kill.created_at).desc()).limit(max(1, min(limit, MAX_PAGE)))))
