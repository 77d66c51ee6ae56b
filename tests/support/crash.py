"""Make a worker kill land *after* a model answer arrived, deterministically (PostgreSQL ledger).

The model activity journals the answer, then settles its reservation, then returns. Holding a
row lock on the reservation (``SELECT ... FOR UPDATE``) lets the journal write through and
blocks the settle: once the journal row exists, the attempt is parked exactly between "the
provider answered" and "Temporal heard of it". A kill there is the crash the journal exists
for. Used by the crash drill (tests/e2e/test_worker_crash.py) and bench/loop_bench.py.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Iterator

from sqlalchemy import select
from sqlmodel import Session, col

import ledger
from ledger import BudgetReservation, ModelJournalEntry


class HoldFailed(Exception):
    """The answer came back before the lock was taken (make the model simulator slower)."""


def _poll(read, done, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise HoldFailed(f"{what} not seen within {timeout:.0f}s (last: {value!r})")
        time.sleep(0.02)


@contextmanager
def held_after_the_answer(url: str, work_keys: list[str], step: int, timeout: float = 60.0) -> Iterator[list[str]]:
    """Lock each key's ``step`` reservation as soon as it is taken, then wait for all their answers
    in the journal; yields the reservation ids while the attempts are parked before their settle."""
    engine = ledger.make_engine(url)
    try:
        with engine.connect() as conn, conn.begin() as tx:
            locked: dict[str, str] = {}
            deadline = time.monotonic() + timeout
            while len(locked) < len(work_keys):
                rows = conn.execute(select(BudgetReservation.id, BudgetReservation.status).where(
                    col(BudgetReservation.work_key).in_(work_keys), BudgetReservation.step == step,
                    col(BudgetReservation.id).not_in(locked)).with_for_update()).all()
                for rid, status in rows:
                    if status != "reserved":
                        raise HoldFailed(f"{rid} ended ({status}) before it was locked: slow the model down")
                    locked[rid] = status
                if time.monotonic() > deadline:
                    raise HoldFailed(f"{len(locked)} of {len(work_keys)} step-{step} calls reserved in {timeout:.0f}s")
                time.sleep(0.02)

            def journaled() -> int:
                with Session(engine) as s:
                    return len(s.exec(select(ModelJournalEntry.work_key).where(
                        col(ModelJournalEntry.reservation_id).in_(list(locked)))).all())

            _poll(journaled, lambda n: n == len(locked), timeout, f"{len(locked)} journaled answers")
            yield list(locked)
            tx.rollback()
    finally:
        engine.dispose()


__all__ = ["HoldFailed", "held_after_the_answer"]
