"""Retention on SQLite and PostgreSQL: old rows go, load-bearing rows stay whatever their age,
and a prune works in bounded batches.

Each test has a ledger of its own (``fresh_ledger_url``): it counts whole tables.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlmodel import Session, select

import ledger
from ledger import (
    RETENTION_RULES, AdmissionCount, CapacityCounter, CapacityHold, Credential, DeadLetter, DeferredItem, Receipt,
    Retention, SideEffect, WorkVersion,
)
from ledger._budgets import BudgetDay, BudgetReservation
from ledger._cancels import CancelRequest
from ledger._model_journal import ModelJournalEntry

NOW = datetime.now(UTC)
OLD = NOW - timedelta(days=200)
RECENT = NOW - timedelta(hours=1)
AGE = timedelta(days=90)


@pytest.fixture
def engine(fresh_ledger_url):
    eng = ledger.make_engine(fresh_ledger_url)
    yield eng
    eng.dispose()


def _receipt(rid: str, at: datetime) -> Receipt:
    return Receipt(id=rid, created_at=at, outcome="accept", reason="admitted", trigger_kind="event", source="github",
                   received_at=at)


def _version(key: str, version: str, status: str, receipt_id: str) -> WorkVersion:
    return WorkVersion(work_key=key, input_version=version, generation=1, status=status, receipt_id=receipt_id,
                       updated_at=OLD)


def _deferred(iid: str, status: str, receipt_id: str) -> DeferredItem:
    return DeferredItem(id=iid, enqueued_at=OLD, updated_at=OLD, tenant="acme", source="github", work_key=f"wk-{iid}",
                        status=status, blocked_on="tenant", next_attempt_at=OLD, receipt_id=receipt_id, payload={})


def _effect(op: str, key: str, version: str, status: str, at: datetime) -> SideEffect:
    return SideEffect(operation_key=op, work_key=key, operation="post_review_comment", target_version=version,
                      generation=1, status=status, created_at=at, updated_at=at)


def _add(engine, *rows) -> None:
    with Session(engine) as s, s.begin():
        for row in rows:
            s.add(row)


def _ids(engine, model, column) -> set:
    with Session(engine) as s:
        return set(s.exec(select(column)).all())


def test_receipts_of_live_versions_and_waiting_items_stay(engine):
    _add(engine, *(_receipt(r, OLD) for r in ("r-admitted", "r-accepted", "r-done", "r-waiting", "r-left", "r-plain")),
         _receipt("r-recent", RECENT),
         _version("wk1", "v1", "admitted", "r-admitted"), _version("wk2", "v1", "accepted", "r-accepted"),
         _version("wk3", "v1", "done", "r-done"),
         _deferred("d-waiting", "waiting", "r-waiting"), _deferred("d-left", "admitted", "r-left"))
    removed = Retention(engine).prune("receipts", AGE)
    assert removed == 3
    assert _ids(engine, Receipt, Receipt.id) == {"r-admitted", "r-accepted", "r-waiting", "r-recent"}


def test_side_effects_in_flight_or_of_a_live_version_stay(engine):
    _add(engine, _effect("op-inflight", "wk1", "v1", "in_flight", OLD),
         _effect("op-live", "wk2", "v1", "done", OLD), _version("wk2", "v1", "admitted", "r"),
         _effect("op-done", "wk3", "v1", "done", OLD), _version("wk3", "v1", "done", "r"),
         _effect("op-fenced", "wk4", "v1", "fenced", OLD), _effect("op-failed", "wk5", "v1", "failed", OLD),
         _effect("op-recent", "wk6", "v1", "done", RECENT))
    assert Retention(engine).prune("side_effects", AGE) == 3
    assert _ids(engine, SideEffect, SideEffect.operation_key) == {"op-inflight", "op-live", "op-recent"}


def test_credentials_budgets_and_quotas(engine):
    old_day, today = OLD.date().isoformat(), NOW.date().isoformat()
    _add(engine,
         Credential(id="c-expired", tenant="acme", work_key="wk", generation=1, issued_at=OLD, expires_at=OLD),
         Credential(id="c-live", tenant="acme", work_key="wk", generation=1, issued_at=NOW,
                    expires_at=NOW + timedelta(minutes=5)),
         BudgetReservation(id="b-held", day=old_day, scopes="global", amount_usd=1.0, status="reserved",
                           work_key="wk", created_at=OLD),
         BudgetReservation(id="b-settled", day=old_day, scopes="global", amount_usd=1.0, status="settled",
                           work_key="wk", created_at=OLD),
         BudgetDay(scope="global", day=old_day, limit_usd=50.0, reserved_usd=1.0),
         BudgetDay(scope="tenant:acme", day="2020-01-01", limit_usd=10.0),
         BudgetDay(scope="tenant:acme", day=today, limit_usd=10.0),
         AdmissionCount(tenant="acme", day=old_day, count=3), AdmissionCount(tenant="acme", day=today, count=1))
    retention = Retention(engine)
    assert retention.prune("credentials", timedelta(days=1)) == 1
    assert retention.prune("budget_reservations", timedelta(days=30)) == 1
    assert retention.prune("budget_days", timedelta(days=30)) == 1  # the day with a held reservation stays
    assert retention.prune("admission_counts", timedelta(days=30)) == 1
    assert _ids(engine, Credential, Credential.id) == {"c-live"}
    assert _ids(engine, BudgetReservation, BudgetReservation.id) == {"b-held"}
    with Session(engine) as s:
        assert {(d.scope, d.day) for d in s.exec(select(BudgetDay))} == {("global", old_day), ("tenant:acme", today)}
        assert {c.day for c in s.exec(select(AdmissionCount))} == {today}


def test_queue_counters_and_dead_letters(engine):
    letter = dict(created_at=OLD, work_key="wk", input_version="v", generation=1, tenant="acme", source="github",
                  owner="oncall", reason="failed")
    _add(engine, _deferred("d-waiting", "waiting", "r1"), _deferred("d-admitted", "admitted", "r2"),
         _deferred("d-dead", "dead", "r3"),
         CapacityCounter(key="key:idle", active=0, updated_at=OLD),
         CapacityCounter(key="key:held", active=0, updated_at=OLD),
         CapacityHold(work_key="wk-held", slot_key="key:held", tenant="acme", acquired_at=OLD),
         CapacityCounter(key="key:busy", active=2, updated_at=OLD),
         CapacityCounter(key="key:fresh", active=0, updated_at=RECENT),
         DeadLetter(id="dl-open", status="open", **letter), DeadLetter(id="dl-resolved", status="resolved", **letter),
         DeadLetter(id="dl-retried", status="retried", **letter))
    retention = Retention(engine)
    assert retention.prune("deferred_items", timedelta(days=30)) == 2
    assert retention.prune("capacity_counters", timedelta(days=7)) == 1
    assert retention.prune("dead_letters", timedelta(days=30)) == 2
    assert _ids(engine, DeferredItem, DeferredItem.id) == {"d-waiting"}
    assert _ids(engine, CapacityCounter, CapacityCounter.key) == {"key:held", "key:busy", "key:fresh"}
    assert _ids(engine, DeadLetter, DeadLetter.id) == {"dl-open"}


def _answer(key: str, version: str, reservation: str | None, at: datetime) -> ModelJournalEntry:
    return ModelJournalEntry(work_key=key, input_version=version, generation=1, step=1, request_digest="d",
                             response={}, cost_usd=0.01, reservation_id=reservation, attempt=1, created_at=at)


def test_journaled_answers_stay_while_their_money_is_held_or_their_version_runs(engine):
    _add(engine, _answer("wk-held", "v1", "b-held", OLD),
         BudgetReservation(id="b-held", day=OLD.date().isoformat(), scopes="global", amount_usd=1.0,
                           status="reserved", work_key="wk-held", created_at=OLD),
         _answer("wk-settled", "v1", "b-settled", OLD),
         BudgetReservation(id="b-settled", day=OLD.date().isoformat(), scopes="global", amount_usd=1.0,
                           status="settled", work_key="wk-settled", created_at=OLD),
         _answer("wk-running", "v1", None, OLD), _version("wk-running", "v1", "admitted", "r"),
         _answer("wk-done", "v1", None, OLD), _version("wk-done", "v1", "done", "r"),
         _answer("wk-recent", "v1", None, RECENT))
    assert Retention(engine).prune("model_journal", timedelta(hours=72)) == 2
    assert _ids(engine, ModelJournalEntry, ModelJournalEntry.work_key) == {"wk-held", "wk-running", "wk-recent"}


def test_cancel_requests_stay_while_a_version_of_their_work_key_runs(engine):
    def request(rid: str, key: str, at: datetime) -> CancelRequest:
        return CancelRequest(id=rid, created_at=at, work_key=key, workflow_id=f"agent-{key}", actor="ops",
                             reason="wrong branch", status="sent")

    _add(engine, request("c-running", "wk1", OLD), _version("wk1", "v2", "admitted", "r"),
         request("c-ended", "wk2", OLD), _version("wk2", "v1", "cancelled", "r"),
         request("c-no-version", "wk3", OLD), request("c-recent", "wk4", RECENT))
    assert Retention(engine).prune("cancel_requests", AGE) == 2
    assert _ids(engine, CancelRequest, CancelRequest.id) == {"c-running", "c-recent"}


def test_a_prune_works_in_bounded_batches(engine):
    _add(engine, *(_receipt(f"r{i}", OLD) for i in range(7)))
    batched = Retention(engine, batch_size=3, max_batches=2)
    assert batched.prune("receipts", AGE) == 6  # two batches of three, the rest waits for the next run
    assert batched.prune("receipts", AGE) == 1
    assert batched.prune("receipts", AGE) == 0


def test_a_counter_in_use_is_stamped_when_raised_and_lowered(engine):
    from intake.capacity import Block, CapacityRequest, SlotClaim
    from ledger import CapacityLedger
    from ledger._capacity import acquire

    with Session(engine) as s, s.begin():
        acquire(s, "wk-stamp", CapacityRequest(tenant="acme", priority=3, slots=(SlotClaim("key:stamp", 1, Block.KEY),)))
    with Session(engine) as s:
        raised = s.get(CapacityCounter, "key:stamp")
    assert raised.active == 1 and raised.updated_at is not None
    assert Retention(engine).prune("capacity_counters", timedelta(hours=1), now=NOW + timedelta(days=30)) == 0
    CapacityLedger(engine).release("wk-stamp")
    assert Retention(engine).prune("capacity_counters", timedelta(days=7)) == 0  # just used: not idle
    assert Retention(engine).prune("capacity_counters", timedelta(days=7), now=NOW + timedelta(days=8)) == 1


def test_every_configured_table_has_a_rule():
    from sluicegate.config.maintenance import RETAINED_TABLES

    assert set(RETAINED_TABLES) - {"artifacts"} == set(RETENTION_RULES)
