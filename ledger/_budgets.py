"""Day budgets in the ledger: per tenant and global, reserved before a model call.

A step reserves its *maximum* cost (prompt estimate + the step's output cap, priced) on
both the tenant's and the global row for the UTC day, in one transaction, with a guarded
``UPDATE ... WHERE spent + reserved + amount <= limit``; if either row refuses, nothing
is reserved and the call is not made. After the call the reservation is settled with the
actual usage; on failure it is released. So concurrent runs cannot overspend: the check
and the increment are one statement per row, serialized by the row lock.

A worker that dies between reserve and settle leaves the reservation held (the money is
over-counted, never under-counted); ``release_stale`` frees reservations older than a bound.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import DateTime, Float, Index, String, update
from sqlalchemy.engine import Engine
from sqlmodel import Field, Session, SQLModel, select

from ledger._sql import dialect_insert, new_id, utcnow

GLOBAL = "global"


class BudgetDay(SQLModel, table=True):
    __tablename__ = "budget_days"

    scope: str = Field(primary_key=True, max_length=160)
    """``global`` or ``tenant:<name>``."""
    day: str = Field(primary_key=True, max_length=10)
    limit_usd: float = Field(sa_type=Float)
    reserved_usd: float = Field(default=0.0, sa_type=Float)
    spent_usd: float = Field(default=0.0, sa_type=Float)


class BudgetReservation(SQLModel, table=True):
    __tablename__ = "budget_reservations"
    __table_args__ = (Index("ix_budget_reservations_created_at", "created_at"),)

    id: str = Field(primary_key=True, max_length=40)
    day: str = Field(max_length=10)
    scopes: str = Field(sa_type=String(400))
    """Comma-separated scopes the amount is held on."""
    amount_usd: float = Field(sa_type=Float)
    status: str = Field(max_length=16)
    work_key: str = Field(max_length=512)
    created_at: datetime = Field(sa_type=DateTime(timezone=True))


class DayBudgetExceeded(Exception):
    """A day budget cannot cover the step's maximum cost."""

    def __init__(self, scope: str, day: str, amount: float) -> None:
        super().__init__(f"{scope} day budget for {day} cannot cover ${amount:.4f} more")
        self.scope = scope


class DayBudgets:
    def __init__(self, engine: Engine, global_limit_usd: float, tenant_limits: dict[str, float],
                 default_tenant_limit_usd: float) -> None:
        self._engine = engine
        self._global = global_limit_usd
        self._tenants = tenant_limits
        self._default = default_tenant_limit_usd

    def _limit(self, scope: str) -> float:
        if scope == GLOBAL:
            return self._global
        return self._tenants.get(scope.removeprefix("tenant:"), self._default)

    def reserve(self, tenant: str, work_key: str, amount_usd: float, now: datetime | None = None) -> str:
        """Hold ``amount_usd`` on the tenant's and the global day; returns the reservation id."""
        day = (now or utcnow()).strftime("%Y-%m-%d")
        scopes = [f"tenant:{tenant}", GLOBAL]
        with Session(self._engine) as s, s.begin():
            for scope in scopes:
                s.execute(dialect_insert(s, BudgetDay).values(scope=scope, day=day, limit_usd=self._limit(scope))
                          .on_conflict_do_nothing())
                held = s.execute(
                    update(BudgetDay)
                    .where(BudgetDay.scope == scope, BudgetDay.day == day,
                           BudgetDay.spent_usd + BudgetDay.reserved_usd + amount_usd <= BudgetDay.limit_usd)
                    .values(reserved_usd=BudgetDay.reserved_usd + amount_usd)
                    .returning(BudgetDay.scope)).scalar_one_or_none()
                if held is None:
                    raise DayBudgetExceeded(scope, day, amount_usd)  # rolls back both rows
            rid = new_id()
            s.add(BudgetReservation(id=rid, day=day, scopes=",".join(scopes), amount_usd=amount_usd,
                                    status="reserved", work_key=work_key, created_at=utcnow()))
        return rid

    def settle(self, reservation_id: str, actual_usd: float) -> None:
        self._finish(reservation_id, actual_usd, "settled")

    def release(self, reservation_id: str) -> None:
        self._finish(reservation_id, 0.0, "released")

    def _finish(self, reservation_id: str, spent: float, status: str) -> None:
        with Session(self._engine) as s, s.begin():
            r = s.get(BudgetReservation, reservation_id, with_for_update=True)
            if r is None or r.status != "reserved":
                return  # settled or released already (an activity retry): nothing to do twice
            for scope in r.scopes.split(","):
                s.execute(update(BudgetDay).where(BudgetDay.scope == scope, BudgetDay.day == r.day)
                          .values(reserved_usd=BudgetDay.reserved_usd - r.amount_usd,
                                  spent_usd=BudgetDay.spent_usd + spent))
            r.status = status
            s.add(r)

    def release_stale(self, older_than: timedelta) -> int:
        cutoff = utcnow() - older_than
        with Session(self._engine) as s:
            stale = [r.id for r in s.exec(select(BudgetReservation).where(
                BudgetReservation.status == "reserved", BudgetReservation.created_at < cutoff))]
        for rid in stale:
            self.release(rid)
        return len(stale)

    def day(self, scope: str, day: str) -> BudgetDay | None:
        with Session(self._engine, expire_on_commit=False) as s:
            return s.get(BudgetDay, (scope, day))
