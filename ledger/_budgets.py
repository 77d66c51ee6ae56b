"""Day budgets in the ledger: per tenant and global, reserved before a model call.

A step reserves its *maximum* cost (prompt bound + the step's output cap, priced) on both
the tenant's and the global row for the UTC day, in one transaction, with a guarded
``UPDATE ... WHERE spent + reserved + amount <= limit``; if either row refuses, nothing is
reserved and the call is not made. Concurrent runs cannot overspend: the check and the
increment are one statement per row, serialized by the row lock.

Every reservation ends exactly once (``_finish`` locks the row and acts only on
``reserved``, so a retried settle, release or sweep does nothing twice):

* ``settled`` — the provider answered; spent = the usage it reported.
* ``released`` — the call provably never reached the provider (refused connection, a 4xx
  the provider does not bill); spent = $0.
* ``estimated`` — the call's fate is unknown (timeout after sending, a 5xx, a cancelled or
  crashed attempt); spent = the reserved estimate. Over-counting is the safe side: a crash
  must never make a billed call free.

Failure modes: a worker that dies between reserve and settle leaves the row ``reserved``.
The step's next attempt charges it at its estimate (``charge_abandoned``); if no attempt
follows (the run was terminated), the scheduled sweep (``settle_stale``) does so after a
grace period — or settles it with the journaled usage when the response had been journaled
before the crash. ``settle`` records the provider's usage even above the reservation; the
reservation is a true upper bound for a provider that honours the output cap (see
``activities/spend.py``), so that only happens when it does not.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from sqlalchemy import DateTime, Float, Index, String, bindparam, update
from sqlalchemy.engine import Connection, Engine
from sqlmodel import Field, Session, SQLModel, col, select

from ledger._engine import single_read
from ledger._model_journal import ModelJournalEntry
from ledger._sql import insert_for as _insert_for, insert_per_dialect, new_id, utcnow
from sluicegate.errors import SluicegateError

GLOBAL = "global"


class ReservationStatus(StrEnum):
    RESERVED = "reserved"
    SETTLED = "settled"
    """Spent what the provider reported."""
    RELEASED = "released"
    """Proven never billed: $0."""
    ESTIMATED = "estimated"
    """Fate unknown: charged at the reserved estimate."""


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
    __table_args__ = (Index("ix_budget_reservations_created_at", "created_at"),
                      Index("ix_budget_reservations_status_created", "status", "created_at"),
                      Index("ix_budget_reservations_work_key", "work_key"))

    id: str = Field(primary_key=True, max_length=80)
    day: str = Field(max_length=10)
    scopes: str = Field(sa_type=String(400))
    """Comma-separated scopes the amount is held on."""
    amount_usd: float = Field(sa_type=Float)
    status: str = Field(max_length=16)
    work_key: str = Field(max_length=512)
    created_at: datetime = Field(sa_type=DateTime(timezone=True))
    input_version: str | None = Field(default=None, max_length=128)
    generation: int | None = None
    step: int | None = None
    """The order's model call this pays for (1-based); None for calls made before steps existed."""
    attempt: int | None = None
    spent_usd: float | None = Field(default=None, sa_type=Float)
    """What the day rows were charged when it ended."""
    ended_at: datetime | None = Field(default=None, sa_type=DateTime(timezone=True))
    note: str | None = None
    """How it ended, in words (``starter.py explain`` shows it)."""


@dataclass(frozen=True)
class StepRef:
    """The model call a reservation pays for: one attempt of one step of one admission."""

    work_key: str
    input_version: str = ""
    generation: int = 0
    step: int = 0
    attempt: int = 0


class DayBudgetExceeded(SluicegateError):
    """A day budget cannot cover the step's maximum cost."""

    def __init__(self, scope: str, day: str, amount: float) -> None:
        super().__init__(f"{scope} day budget for {day} cannot cover ${amount:.4f} more")
        self.scope = scope


class ReservationEnded(SluicegateError):
    """A reservation id was reserved again after it had ended (ids are per attempt: a bug)."""


@dataclass
class StaleSweep:
    from_journal: list[str]
    """Settled with the usage of a response journaled before its worker died."""
    estimated: list[str]
    """Charged at their estimate: nothing says whether the provider billed."""


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

    def reserve(self, tenant: str, work_key: str, amount_usd: float, now: datetime | None = None, *,
                reservation_id: str | None = None, ref: StepRef | None = None) -> str:
        """Hold ``amount_usd`` on the tenant's and the global day; returns the reservation id.
        Reserving an id that is already held returns it (a retried reserve holds nothing twice)."""
        day = (now or utcnow()).strftime("%Y-%m-%d")
        scopes = [f"tenant:{tenant}", GLOBAL]
        rid = reservation_id or new_id()
        ref = ref or StepRef(work_key)
        with self._engine.begin() as conn:  # prebuilt Core statements: no Session, no ORM bookkeeping
            # The reservation's row first (its own id: the usual case inserts it, one statement), then the
            # day rows, in the order an ending locks them (``_finish_in``). A refused hold rolls both back.
            inserted = conn.execute(_INSERT_RESERVATION[conn.dialect.name], {
                "id": rid, "day": day, "scopes": ",".join(scopes), "amount_usd": amount_usd,
                "status": ReservationStatus.RESERVED, "work_key": ref.work_key, "created_at": utcnow(),
                "input_version": ref.input_version or None, "generation": ref.generation or None,
                "step": ref.step or None, "attempt": ref.attempt or None}).first()
            if inserted is None:  # the id exists: a retried reserve holds nothing twice
                status = conn.execute(_STATUS, {"p_id": rid}).scalar()
                if status != ReservationStatus.RESERVED:
                    raise ReservationEnded(f"reservation {rid} already ended {status}")
                return rid
            for scope in scopes:
                hold = {"p_scope": scope, "p_day": day, "p_amount": amount_usd}
                ok = conn.execute(_HOLD, hold).scalar_one_or_none()
                if ok is None:  # the day's row does not exist yet (first call of the day), or it cannot cover it
                    conn.execute(_insert_for(conn, BudgetDay).values(scope=scope, day=day, limit_usd=self._limit(scope))
                                 .on_conflict_do_nothing())
                    ok = conn.execute(_HOLD, hold).scalar_one_or_none()
                if ok is None:
                    raise DayBudgetExceeded(scope, day, amount_usd)  # rolls back both rows and the reservation
        return rid

    def settle(self, reservation_id: str, actual_usd: float, note: str = "answered") -> bool:
        """Charge the provider's usage; False when the reservation had already ended."""
        return self._finish(reservation_id, actual_usd, ReservationStatus.SETTLED, note)

    def release(self, reservation_id: str, note: str = "never sent") -> bool:
        """Give the whole hold back ($0): only for a call proven never billed."""
        return self._finish(reservation_id, 0.0, ReservationStatus.RELEASED, note)

    def charge_estimate(self, reservation_id: str, note: str) -> bool:
        """Charge the reserved estimate: the call's fate is unknown."""
        return self._finish(reservation_id, None, ReservationStatus.ESTIMATED, note)

    def _finish(self, reservation_id: str, spent: float | None, status: ReservationStatus, note: str) -> bool:
        with self._engine.begin() as conn:
            return _finish_in(conn, reservation_id, spent, status, note)

    def held_for_step(self, ref: StepRef) -> list[BudgetReservation]:
        """Reservations of earlier attempts of ``ref``'s step that never ended."""
        with single_read(self._engine) as conn, Session(bind=conn, expire_on_commit=False) as s:
            return list(s.exec(select(BudgetReservation).where(
                BudgetReservation.work_key == ref.work_key, BudgetReservation.input_version == ref.input_version,
                BudgetReservation.generation == ref.generation, BudgetReservation.step == ref.step,
                col(BudgetReservation.attempt) < ref.attempt,
                BudgetReservation.status == ReservationStatus.RESERVED)))

    def charge_abandoned(self, ref: StepRef) -> list[str]:
        """Charge earlier attempts of the step still holding money at their estimate: they ended
        without a word (worker lost, timed out), so the provider may have billed them."""
        if ref.attempt <= 1:  # no earlier attempt (held_for_step would match nothing): skip the write lock
            return []
        charged = []
        for r in self.held_for_step(ref):
            if self.charge_estimate(r.id, f"attempt {r.attempt} ended without an answer (worker lost or timed "
                                          f"out); charged at its estimate by attempt {ref.attempt}"):
                charged.append(r.id)
        return charged

    def settle_stale(self, older_than: timedelta, now: datetime | None = None) -> StaleSweep:
        """End reservations still held after ``older_than``: with the journaled usage when the
        response was journaled, else at their estimate (the worker died; fate unknown)."""
        cutoff = (now or utcnow()) - older_than
        with Session(self._engine) as s:
            stale = list(s.exec(select(BudgetReservation.id, ModelJournalEntry.cost_usd)
                                .join(ModelJournalEntry, col(ModelJournalEntry.reservation_id) == BudgetReservation.id,
                                      isouter=True)
                                .where(BudgetReservation.status == ReservationStatus.RESERVED,
                                       BudgetReservation.created_at < cutoff)))
        sweep = StaleSweep([], [])
        for rid, journaled in stale:
            if journaled is not None:
                if self.settle(rid, journaled, "answered and journaled; settled by the stale-reservation sweep"):
                    sweep.from_journal.append(rid)
            elif self.charge_estimate(rid, f"still held after {older_than} (worker died; fate unknown); "
                                           "charged at its estimate by the stale-reservation sweep"):
                sweep.estimated.append(rid)
        return sweep

    def reservation(self, reservation_id: str) -> BudgetReservation | None:
        with Session(self._engine, expire_on_commit=False) as s:
            return s.get(BudgetReservation, reservation_id)

    def day(self, scope: str, day: str) -> BudgetDay | None:
        with Session(self._engine, expire_on_commit=False) as s:
            return s.get(BudgetDay, (scope, day))


def _finish_in(conn: Connection, reservation_id: str, spent: float | None, status: ReservationStatus,
               note: str) -> bool:
    """End a held reservation inside the caller's transaction; False when it had ended already.

    One guarded ``UPDATE ... WHERE status = 'reserved' RETURNING``: of two racing enders (a retried
    settle, the next attempt, the sweep) the row lock lets exactly one match; the other finds the
    row ended and changes nothing."""
    end = {"p_id": reservation_id, "p_status": status, "p_ended_at": utcnow(), "p_note": note[:400]}
    row = (conn.execute(_END_AT_ESTIMATE, end) if spent is None else conn.execute(_END, {**end, "p_spent": spent})).first()
    if row is None:
        return False  # ended already (a retry, the next attempt or the sweep): nothing to do twice
    amount, scopes, day = row
    charged = amount if spent is None else spent
    for scope in scopes.split(","):
        conn.execute(_UNHOLD, {"p_scope": scope, "p_day": day, "p_amount": amount, "p_charged": charged})
    return True


# The hot statements, built once (building one costs more CPU than running it on SQLite).
_STATUS = select(col(BudgetReservation.status)).where(col(BudgetReservation.id) == bindparam("p_id"))
_HOLD = (update(BudgetDay)
         .where(col(BudgetDay.scope) == bindparam("p_scope"), col(BudgetDay.day) == bindparam("p_day"),
                col(BudgetDay.spent_usd) + col(BudgetDay.reserved_usd) + bindparam("p_amount", type_=Float)
                <= col(BudgetDay.limit_usd))
         .values(reserved_usd=col(BudgetDay.reserved_usd) + bindparam("p_amount", type_=Float))
         .returning(col(BudgetDay.scope)))
"""Hold an amount on a day row, only while spent + reserved + amount stays within its limit."""
_INSERT_RESERVATION = insert_per_dialect(
    BudgetReservation, lambda insert: insert.on_conflict_do_nothing().returning(col(BudgetReservation.id)))
"""Per dialect: a reservation's row unless its id exists (then no row back)."""
_ENDING = (update(BudgetReservation)
           .where(col(BudgetReservation.id) == bindparam("p_id"), col(BudgetReservation.status) == ReservationStatus.RESERVED)
           .returning(col(BudgetReservation.amount_usd), col(BudgetReservation.scopes), col(BudgetReservation.day)))
_END = _ENDING.values(status=bindparam("p_status"), spent_usd=bindparam("p_spent", type_=Float),
                      ended_at=bindparam("p_ended_at"), note=bindparam("p_note"))
_END_AT_ESTIMATE = _ENDING.values(status=bindparam("p_status"), spent_usd=col(BudgetReservation.amount_usd),
                                  ended_at=bindparam("p_ended_at"), note=bindparam("p_note"))
_UNHOLD = (update(BudgetDay).where(col(BudgetDay.scope) == bindparam("p_scope"), col(BudgetDay.day) == bindparam("p_day"))
           .values(reserved_usd=col(BudgetDay.reserved_usd) - bindparam("p_amount", type_=Float),
                   spent_usd=col(BudgetDay.spent_usd) + bindparam("p_charged", type_=Float)))
