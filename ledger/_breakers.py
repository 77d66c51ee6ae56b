"""Breaker state per provider in the ledger, shared by every API and worker process."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from intake.capacity import BreakerPolicy, BreakerState, record_failure
from ledger._capacity_models import Breaker, DeferredItem
from ledger._sql import as_utc, dialect_insert, utcnow


def _state(row: Breaker) -> BreakerState:
    return BreakerState(row.provider, row.failures, as_utc(row.window_start), as_utc(row.opened_at), row.last_error)


class BreakerBoard:
    def __init__(self, engine: Engine, policy: BreakerPolicy) -> None:
        self._engine = engine
        self.policy = policy

    def states(self) -> list[BreakerState]:
        with Session(self._engine) as s:
            return [_state(row) for row in s.execute(select(Breaker)).scalars()]

    def record_failure(self, provider: str, error: str, now: datetime | None = None) -> BreakerState:
        now = now or utcnow()
        with Session(self._engine) as s, s.begin():
            s.execute(dialect_insert(s, Breaker).values(provider=provider, failures=0, updated_at=now)
                      .on_conflict_do_nothing())  # two first failures at once must not collide
            row = s.get(Breaker, provider, with_for_update=True)
            if row is None:  # inserted or found just above, in this transaction
                raise LookupError(f"breaker row {provider!r} vanished while recording a failure")
            new = record_failure(_state(row), now, self.policy, error[:500])
            row.failures, row.window_start, row.opened_at, row.last_error = (
                new.failures, new.window_start, new.opened_at, new.last_error)
            row.updated_at = now
            s.add(row)
            return new

    def reset(self, provider: str, note: str) -> bool:
        """Operator override: close the breaker now (no ramp); ``note`` (who, why) replaces the last error."""
        with Session(self._engine) as s, s.begin():
            row = s.get(Breaker, provider, with_for_update=True)
            if row is None:
                return False
            row.failures, row.window_start, row.opened_at, row.updated_at = 0, None, None, utcnow()
            row.last_error = note[:500]
            s.add(row)
            s.execute(update(DeferredItem).where(col(DeferredItem.status) == "waiting",
                                                 col(DeferredItem.blocked_on) == "breaker-open")
                      .values(next_attempt_at=utcnow()))  # due at the next pass
            return True
