"""The ledger gauges read real rows on SQLite and PostgreSQL: the oldest waiting deferred item per
tenant, open dead letters per tenant, open breakers, the oldest accepted-but-never-admitted receipt."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlmodel import Session

import ledger
from intake.capacity.breaker import BreakerPolicy
from ledger import BreakerBoard, DeadLetter, DeferredItem, Receipt, WorkVersion
from sluicegate.observability.ledger_gauges import CachedReading, LedgerReading, read_ledger

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
POLICY = BreakerPolicy(failure_threshold=2, window_seconds=60, open_seconds=600, ramp_seconds=0)


def _deferred(tenant: str, age: float, status: str = "waiting") -> DeferredItem:
    at = NOW - timedelta(seconds=age)
    return DeferredItem(id=uuid.uuid4().hex, enqueued_at=at, updated_at=at, tenant=tenant, source="github",
                        work_key=f"{tenant}/github:{tenant}/api#{uuid.uuid4().int % 10**6}:review", status=status,
                        blocked_on="tenant", next_attempt_at=at, receipt_id=uuid.uuid4().hex, payload={})


def _letter(tenant: str, status: str) -> DeadLetter:
    return DeadLetter(id=f"dl_{uuid.uuid4().hex}", created_at=NOW, work_key=f"{tenant}/k{uuid.uuid4().hex}",
                      input_version="v1", generation=1, tenant=tenant, source="github", owner="ops", status=status,
                      reason="failed")


def _accepted(age: float, status: str) -> list:
    rid, key = uuid.uuid4().hex, f"acme/github:acme/api#{uuid.uuid4().int % 10**6}:review"
    at = NOW - timedelta(seconds=age)
    return [Receipt(id=rid, created_at=at, received_at=at, outcome="accept", reason="admitted", trigger_kind="event",
                    source="github", tenant="acme", work_key=key, input_version="v1"),
            WorkVersion(work_key=key, input_version="v1", generation=1, status=status, receipt_id=rid, updated_at=at)]


def test_gauges_read_the_ledger(fresh_ledger_url):
    engine = ledger.make_engine(fresh_ledger_url)
    try:
        assert read_ledger(engine, POLICY, NOW) == LedgerReading()  # an empty ledger: nothing to report
        with Session(engine) as s:
            s.add_all([_deferred("acme", 600), _deferred("acme", 60), _deferred("beta", 30),
                       _deferred("gamma", 9000, status="admitted"),
                       _letter("acme", "open"), _letter("acme", "open"), _letter("beta", "resolved"),
                       *_accepted(400, "accepted"), *_accepted(900, "admitted")])
            s.commit()
        board = BreakerBoard(engine, POLICY)
        for _ in range(POLICY.failure_threshold):
            board.record_failure("model", "503", NOW - timedelta(seconds=10))
        board.record_failure("forge", "503", NOW - timedelta(seconds=10))  # one failure: still closed

        reading = read_ledger(engine, POLICY, NOW)
    finally:
        engine.dispose()
    assert reading.queue_oldest_age == {"acme": pytest.approx(600), "beta": pytest.approx(30)}
    assert reading.dead_letters_open == {"acme": 2}
    assert reading.breakers_open == {"model": 1, "forge": 0}
    assert reading.pending_admission_age == pytest.approx(400)


def test_cached_reading_reads_once_per_period_and_drops_the_values_on_failure():
    clock, reads = [0.0], []

    def read() -> LedgerReading:
        reads.append(clock[0])
        if len(reads) == 2:
            raise OSError("ledger down")
        return LedgerReading(dead_letters_open={"acme": len(reads)})

    cache = CachedReading(read, 15, clock=lambda: clock[0], wall=lambda: 1_000_000 + clock[0])
    assert cache.last_success is None
    assert cache.get().dead_letters_open == {"acme": 1} and cache.last_success == 1_000_000
    clock[0] = 10
    assert cache.get().dead_letters_open == {"acme": 1} and reads == [0.0]
    clock[0] = 16
    assert cache.get() is None  # the read failed: nothing is reported, not the old values
    assert cache.last_success == 1_000_000  # ...and the last good read's time says how stale
    clock[0] = 32
    assert cache.get().dead_letters_open == {"acme": 3} and cache.last_success == 1_000_032
