"""The idempotency ledger for external mutations.

Keyed by operation key (work key + operation + target version, never the attempt), an
entry moves ``in_flight`` → ``done`` | ``failed``. The dangerous window is a crash after
the external system committed and before ``done`` was written: the next attempt finds
``in_flight`` and must reconcile with the external system before calling it again.
:meth:`SideEffectLedger.begin` tells the caller which case it is in.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

import functools

from sqlalchemy import bindparam, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.dml import ReturningInsert
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from ledger._engine import single_read
from ledger._models import Receipt, SideEffect, WorkItem
from ledger._sql import dialect_insert, rowcount, utcnow


class BeginState(StrEnum):
    NEW = "new"
    """First attempt: the caller may perform the operation."""
    IN_FLIGHT = "in_flight"
    """An earlier attempt started and never finished: reconcile before acting."""
    DONE = "done"
    """Already performed: return the stored result, do not act."""
    FAILED = "failed"
    """Failed for good earlier: do not act."""
    FENCED = "fenced"
    """The caller's generation is older than the work item's: a newer admission owns it."""


@dataclass(frozen=True)
class AttemptIdentity:
    """Who is claiming an operation: the workflow, run and activity attempt (from Temporal's activity info)."""

    workflow_id: str | None = None
    run_id: str | None = None
    activity_attempt: int | None = None


@dataclass(frozen=True)
class ClaimStanding:
    """Where a claim stands right before the external call (:meth:`SideEffectLedger.standing`)."""

    held: bool
    """The claim still owns the in-flight entry, and no newer admission owns the work item."""
    newer_generation: int | None = None
    """The work item's generation, when a newer admission than the entry's own owns it."""


@dataclass(frozen=True)
class BeginResult:
    state: BeginState
    attempts: int
    external_id: str | None = None
    result: dict[str, Any] | None = None
    error: str | None = None


class SideEffectLedger:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def begin(self, operation_key: str, *, work_key: str, operation: str, target_version: str,
              generation: int, attempt: AttemptIdentity = AttemptIdentity()) -> BeginResult:
        """Claim the operation for ``generation``; refused (FENCED) when a newer admission exists.

        The row carries the identity bundle: the claiming ``attempt`` (updated when a later attempt
        takes the entry over) and the concurrency key and policy version of the admission that
        owns ``generation`` (its accept receipt)."""
        now = utcnow()
        with Session(self._engine, expire_on_commit=False) as s, s.begin():
            conn = s.connection()  # prebuilt Core statements on the usual path (every mutation begins here)
            identity = {**asdict(attempt), **self._admission_identity(s, work_key, generation)}
            current = conn.execute(_CURRENT_GENERATION, {"p_work_key": work_key}).scalar()
            if current is not None and generation < current:
                return self._fence(s, operation_key, work_key, operation, target_version, generation, current, now,
                                   identity)
            claimed = conn.execute(_claim(s.get_bind().dialect.name), {
                "operation_key": operation_key, "work_key": work_key, "operation": operation,
                "target_version": target_version, "generation": generation, "status": "in_flight", "attempts": 1,
                "created_at": now, "updated_at": now, **identity}).scalar_one_or_none()
            if claimed is not None:
                return BeginResult(BeginState.NEW, 1)
            row = s.get(SideEffect, operation_key, with_for_update=True)
            if row is None:  # the insert above conflicted with it, in this transaction
                raise LookupError(f"side effect {operation_key} vanished while being claimed")
            if row.status in ("in_flight", "fenced") or (row.status == "failed" and row.generation < generation):
                # A newer generation takes over an entry an older one left behind.
                if row.status != "in_flight":
                    row.status, row.error = "in_flight", None
                row.attempts += 1
                row.generation = max(row.generation, generation)
                row.updated_at = now
                for name, value in identity.items():
                    setattr(row, name, value)
                s.add(row)
            return BeginResult(BeginState(row.status), row.attempts, row.external_id, row.result, row.error)

    @staticmethod
    def _admission_identity(s: Session, work_key: str, generation: int) -> dict[str, str | None]:
        """The concurrency key and policy version on the accept receipt of ``generation``'s admission."""
        row = s.connection().execute(_ADMISSION_IDENTITY, {"p_work_key": work_key, "p_generation": generation}).first()
        return {"concurrency_key": row.concurrency_key if row else None,
                "policy_version": row.policy_version if row else None}

    @staticmethod
    def _fence(s: Session, operation_key: str, work_key: str, operation: str, target_version: str,
               generation: int, current: int, now, identity: dict) -> BeginResult:
        error = f"generation {generation} is older than the work item's current generation {current}"
        stmt = dialect_insert(s, SideEffect).values(
            operation_key=operation_key, work_key=work_key, operation=operation, target_version=target_version,
            generation=generation, status="fenced", attempts=1, error=error, created_at=now,
            updated_at=now, **identity).on_conflict_do_nothing()
        s.execute(stmt)
        return BeginResult(BeginState.FENCED, 1, error=error)

    def complete(self, operation_key: str, external_id: str | None, result: dict[str, Any], *,
                 claim: int | None = None) -> bool:
        """Record the operation done; with ``claim`` (the ``attempts`` its begin returned), only while
        that begin still holds the entry. False: nothing written (finished already, or taken over)."""
        return self._finish(operation_key, claim, status="done", external_id=external_id, result=result, error=None)

    def fail(self, operation_key: str, error: str, *, claim: int | None = None) -> bool:
        """Record the operation failed for good; ``claim`` and the answer as for :meth:`complete`."""
        return self._finish(operation_key, claim, status="failed", error=error[:2000])

    def fence(self, operation_key: str, error: str, *, claim: int) -> bool:
        """Give up an entry its claim still holds because a newer admission owns the work item: a
        newer generation's begin takes a ``fenced`` entry over (and reconciles), as an in-flight one."""
        return self._finish(operation_key, claim, status="fenced", error=error[:2000])

    def holds(self, operation_key: str, claim: int) -> bool:
        """Does the begin that returned ``attempts == claim`` still own the in-flight entry?

        Every begin on an in-flight entry increments ``attempts``; an attempt that stalled
        (lost heartbeat, paused worker) while a newer attempt began has lost its claim and
        must not perform the operation.
        """
        return self.standing(operation_key, claim).held

    def standing(self, operation_key: str, claim: int) -> ClaimStanding:
        """:meth:`holds`, and whether a newer admission now owns the work item: ``begin`` fences an
        older generation only when it claims, and an admission can commit after that (while a slow
        reconcile runs, say) — so this is asked again right before the external call."""
        with single_read(self._engine) as conn:  # one statement: no write lock (asked before every mutation)
            row = conn.execute(_CLAIM_STANDING, {"p_key": operation_key}).first()
        if row is None:
            return ClaimStanding(False)
        newer = row.current if row.current is not None and row.current > row.generation else None
        return ClaimStanding(row.status == "in_flight" and row.attempts == claim and newer is None, newer)

    def get(self, operation_key: str) -> SideEffect | None:
        with Session(self._engine, expire_on_commit=False) as s:
            return s.get(SideEffect, operation_key)

    def _finish(self, operation_key: str, claim: int | None, **values: Any) -> bool:
        """Only an in-flight entry finishes, and with ``claim`` only while that claim holds it: a
        stalled attempt's late answer (a 422 "already exists" after a newer attempt performed the
        operation, say) must not overwrite the newer attempt's outcome."""
        with self._engine.begin() as conn:  # one prebuilt Core statement; the SET clause is the parameters'
            params = {"p_key": operation_key, "updated_at": utcnow(), **values}
            if claim is None:
                return rowcount(conn.execute(_FINISH, params)) == 1
            return rowcount(conn.execute(_FINISH_CLAIMED, {**params, "p_claim": claim})) == 1


# The hot statements, built once (building one costs more CPU than running it on SQLite).
_CURRENT_GENERATION = select(col(WorkItem.generation)).where(col(WorkItem.work_key) == bindparam("p_work_key"))
_ADMISSION_IDENTITY = (select(col(Receipt.concurrency_key), col(Receipt.policy_version))
                       .where(col(Receipt.work_key) == bindparam("p_work_key"),
                              col(Receipt.generation) == bindparam("p_generation"), col(Receipt.outcome) == "accept")
                       .order_by(col(Receipt.created_at).desc()).limit(1))
_CLAIM_STANDING = (select(col(SideEffect.status), col(SideEffect.attempts), col(SideEffect.generation),
                          select(col(WorkItem.generation)).where(col(WorkItem.work_key) == col(SideEffect.work_key))
                          .scalar_subquery().label("current"))
                   .where(col(SideEffect.operation_key) == bindparam("p_key")))
_FINISH = update(SideEffect).where(col(SideEffect.operation_key) == bindparam("p_key"),
                                   col(SideEffect.status) == "in_flight")
_FINISH_CLAIMED = _FINISH.where(col(SideEffect.attempts) == bindparam("p_claim"))


@functools.cache
def _claim(dialect: str) -> ReturningInsert[tuple[str]]:
    """``INSERT ... ON CONFLICT DO NOTHING RETURNING operation_key`` for the dialect, built once."""
    return ((postgresql.insert if dialect == "postgresql" else sqlite.insert)(SideEffect)
            .on_conflict_do_nothing().returning(col(SideEffect.operation_key)))
