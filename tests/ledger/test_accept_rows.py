"""The accept path's rows read back column by column (review of the prebuilt Core statements).

``decide`` (with capacity: slots, quota, rate bucket, holds) and ``mark_admitted`` are run for a
new work key and again for a newer version of it (the upsert's ON CONFLICT branch); every column of
work_items, work_versions, receipts, capacity_holds, capacity_counters, admission_counts and
rate_buckets is read back with raw SQL and checked, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from sqlalchemy import text

from intake.capacity import Block, CapacityRequest, RateLimit, SlotClaim
from intake.decision import Outcome, Reason
from intake.envelope import TriggerKind
from intake.ports import CapacityContext
from intake.receipts import ReceiptDraft
from ledger import CapacityLedger, SqlIntakeStore
from ledger._sql import as_utc


def _draft(tenant: str, work_key: str, version: str) -> ReceiptDraft:
    return ReceiptDraft(outcome=Outcome.ACCEPT, reason=Reason.ADMITTED, message="admitting",
                        trigger_kind=TriggerKind.EVENT, source="github", received_at=datetime.now(UTC),
                        delivery_id=str(uuid.uuid4()), tenant=tenant, work_key=work_key, target_id=work_key,
                        input_version=version)


def _ctx(tenant: str) -> CapacityContext:
    slots = (SlotClaim(f"key:{tenant}-repo", 2, Block.KEY), SlotClaim(f"tenant:{tenant}", 5, Block.TENANT))
    req = CapacityRequest(tenant, 3, slots, day_quota=10, rate=RateLimit(f"rate:{tenant}", 0.01, 5.0))
    return CapacityContext(req, {"envelope": {}, "candidate": {}})


def _rows(engine, sql: str, **params) -> list[dict]:
    with engine.connect() as c:
        return [dict(r._mapping) for r in c.execute(text(sql), params)]


def _stamp(value) -> datetime:
    """A timestamp column as written. SQLite hands back the text: it must be the format SQLAlchemy's
    DateTime writes (what the ORM wrote; string comparisons in retention and the console rely on it),
    not the driver's default adapter for an untyped parameter (``...+00:00``)."""
    if isinstance(value, str):
        return datetime.strptime(value, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC)
    assert isinstance(value, datetime)
    return as_utc(value)


def test_accept_and_mark_admitted_rows_column_by_column(engine):
    tenant = f"rows-{uuid.uuid4().hex[:8]}"
    key = f"{tenant}/github:{tenant}/r#1:review"
    store, capacity = SqlIntakeStore(engine), CapacityLedger(engine)
    before = datetime.now(UTC)
    for generation, version in ((1, "v1"), (2, "v2")):
        decision = store.decide(_draft(tenant, key, version), _ctx(tenant))
        assert (decision.outcome, decision.generation) == (Outcome.ACCEPT, generation)
        store.mark_admitted(decision, f"wf-{version}", f"run-{version}")

        [item] = _rows(engine, "SELECT * FROM work_items WHERE work_key = :k", k=key)
        assert (item["tenant"], item["target_id"], item["generation"], item["current_version"], item["status"],
                item["workflow_id"]) == (tenant, key, generation, version, "admitted", f"wf-{version}")
        assert _stamp(item["updated_at"]) >= before

        [ver] = _rows(engine, "SELECT * FROM work_versions WHERE work_key = :k AND input_version = :v",
                      k=key, v=version)
        assert (ver["generation"], ver["status"], ver["receipt_id"], ver["workflow_id"], ver["run_id"],
                ver["readmissions"]) == (generation, "admitted", decision.receipt_id, f"wf-{version}",
                                         f"run-{version}", 0)
        assert ver["result"] in (None, "null")  # no result yet (JSON null, as the ORM wrote it)
        assert _stamp(ver["updated_at"]) >= before

        [rec] = _rows(engine, "SELECT * FROM receipts WHERE id = :i", i=decision.receipt_id)
        assert (rec["outcome"], rec["work_key"], rec["generation"], rec["workflow_id"], rec["run_id"]) == (
            "accept", key, generation, f"wf-{version}", f"run-{version}")

        holds = _rows(engine, "SELECT * FROM capacity_holds WHERE work_key = :k ORDER BY slot_key", k=key)
        assert [(h["slot_key"], h["tenant"], h["generation"]) for h in holds] == [
            (f"key:{tenant}-repo", tenant, generation), (f"tenant:{tenant}", tenant, generation)]
        assert all(_stamp(h["acquired_at"]) >= before for h in holds)

    counters = _rows(engine, "SELECT * FROM capacity_counters WHERE key IN (:a, :b)",
                     a=f"key:{tenant}-repo", b=f"tenant:{tenant}")
    assert sorted(c["active"] for c in counters) == [1, 1]  # the newer version reused the run's slots
    assert all(_stamp(c["updated_at"]) >= before for c in counters)
    [quota] = _rows(engine, "SELECT * FROM admission_counts WHERE tenant = :t", t=tenant)
    assert quota["count"] == 1
    [bucket] = _rows(engine, "SELECT * FROM rate_buckets WHERE key = :k", k=f"rate:{tenant}")
    assert bucket["tokens"] == 4.0 and _stamp(bucket["updated_at"]) >= before
    other = f"{tenant}/github:{tenant}/r#2:review"  # a second key: the bucket row exists (the UPDATE branch)
    assert store.decide(_draft(tenant, other, "v1"), _ctx(tenant)).outcome == Outcome.ACCEPT
    [bucket2] = _rows(engine, "SELECT * FROM rate_buckets WHERE key = :k", k=f"rate:{tenant}")
    assert 3.0 <= bucket2["tokens"] < 3.5 and _stamp(bucket2["updated_at"]) >= _stamp(bucket["updated_at"])
    [quota] = _rows(engine, "SELECT * FROM admission_counts WHERE tenant = :t", t=tenant)
    assert quota["count"] == 2
    assert sorted(CapacityLedger(engine).release(other)) == [f"key:{tenant}-repo", f"tenant:{tenant}"]

    assert sorted(capacity.release(key, up_to_generation=2)) == [f"key:{tenant}-repo", f"tenant:{tenant}"]
    counters = _rows(engine, "SELECT * FROM capacity_counters WHERE key IN (:a, :b)",
                     a=f"key:{tenant}-repo", b=f"tenant:{tenant}")
    assert sorted(c["active"] for c in counters) == [0, 0]
    assert _rows(engine, "SELECT * FROM capacity_holds WHERE work_key = :k", k=key) == []


def test_racing_versions_of_one_work_key_hold_its_slots_once(engine):
    """Accepts of one work key from many threads (two replicas): the holds lock is asked once per
    accept now; a racer that missed the winner's holds must still not take the slots a second time."""
    from concurrent.futures import ThreadPoolExecutor

    tenant = f"race1-{uuid.uuid4().hex[:8]}"
    key = f"{tenant}/github:{tenant}/r#1:review"
    store = SqlIntakeStore(engine)
    with ThreadPoolExecutor(max_workers=6) as pool:
        decisions = list(pool.map(lambda v: store.decide(_draft(tenant, key, v), _ctx(tenant)),
                                  [f"v{n}" for n in range(6)]))
    accepted = [d for d in decisions if d.outcome == Outcome.ACCEPT]
    assert accepted, [d.reason for d in decisions]
    counters = _rows(engine, "SELECT * FROM capacity_counters WHERE key IN (:a, :b)",
                     a=f"key:{tenant}-repo", b=f"tenant:{tenant}")
    assert sorted(c["active"] for c in counters) == [1, 1]
    holds = _rows(engine, "SELECT * FROM capacity_holds WHERE work_key = :k", k=key)
    assert len(holds) == 2 and {h["generation"] for h in holds} == {max(d.generation or 0 for d in accepted)}
    assert sorted(CapacityLedger(engine).release(key)) == [f"key:{tenant}-repo", f"tenant:{tenant}"]
    counters = _rows(engine, "SELECT * FROM capacity_counters WHERE key IN (:a, :b)",
                     a=f"key:{tenant}-repo", b=f"tenant:{tenant}")
    assert sorted(c["active"] for c in counters) == [0, 0]


def test_mark_admitted_on_sqlite_takes_the_write_lock_up_front(engine):
    """``mark_admitted`` runs on ``engine.begin()`` now, not a Session: on SQLite its transaction must
    still open with ``BEGIN IMMEDIATE`` (ledger/_engine.py), or a read-then-write races a writer."""
    from sqlalchemy import event

    if engine.dialect.name != "sqlite":
        pytest.skip("PostgreSQL: no BEGIN variant to check (row locks, READ COMMITTED)")
    tenant = f"begin-{uuid.uuid4().hex[:8]}"
    key = f"{tenant}/github:{tenant}/r#1:review"
    store = SqlIntakeStore(engine)
    decision = store.decide(_draft(tenant, key, "v1"), _ctx(tenant))
    seen: list[str] = []

    def _record(_conn, _cursor, statement, *_args) -> None:
        seen.append(statement.strip().split()[0].upper() + (" IMMEDIATE" if "IMMEDIATE" in statement else ""))

    event.listen(engine, "before_cursor_execute", _record)
    try:
        store.mark_admitted(decision, "wf-1", "run-1")
    finally:
        event.remove(engine, "before_cursor_execute", _record)
    assert seen[:1] == ["BEGIN IMMEDIATE"] and seen.count("UPDATE") == 3, seen
