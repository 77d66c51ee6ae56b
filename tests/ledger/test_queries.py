"""Operator queries: receipt filters and the explain chain, on SQLite and PostgreSQL."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from intake.decision import Outcome, Reason
from intake.envelope import TriggerKind
from intake.receipts import ReceiptDraft
from ledger import SideEffectLedger, SqlIntakeStore
from ledger._queries import ReceiptFilter, explain, list_receipts


def _draft(key, version, delivery, outcome=Outcome.ACCEPT, reason=Reason.ADMITTED, source="github"):
    return ReceiptDraft(outcome=outcome, reason=reason, message="m", trigger_kind=TriggerKind.EVENT, source=source,
                        received_at=datetime.now(UTC), delivery_id=delivery, work_key=key,
                        target_id="acme/api#1", input_version=version, tenant="acme")


def test_explain_follows_a_delivery_to_its_work_key_runs_and_effects(engine):
    key, delivery = f"acme/github:acme/api#{uuid.uuid4().int % 10**6}:review", uuid.uuid4().hex
    store = SqlIntakeStore(engine)
    accepted = store.decide(_draft(key, "v1", delivery))
    store.decide(_draft(key, "v1", uuid.uuid4().hex))  # duplicate work, another delivery
    SideEffectLedger(engine).begin(f"op_{uuid.uuid4().hex}", work_key=key, operation="post",
                                   target_version="v1", generation=accepted.generation)
    chain = explain(engine, delivery)
    assert chain.work_keys == [key]
    assert [r.reason for r in chain.receipts] == ["admitted", "duplicate-work"]
    assert [v.generation for v in chain.versions] == [accepted.generation]
    assert [e.status for e in chain.side_effects] == ["in_flight"]
    assert explain(engine, key).receipts == chain.receipts
    assert explain(engine, "no-such-thing").receipts == []


def test_receipt_filters_combine(engine):
    key, source = f"acme/github:acme/api#{uuid.uuid4().int % 10**6}:review", f"src-{uuid.uuid4().hex[:6]}"
    store = SqlIntakeStore(engine)
    store.decide(_draft(key, "v1", uuid.uuid4().hex, source=source))
    store.decide(_draft(key, "v0", uuid.uuid4().hex, Outcome.REJECT, Reason.STALE_VERSION, source=source))
    rows = list_receipts(engine, ReceiptFilter(source=source, outcome="reject"))
    assert [(r.input_version, r.reason) for r in rows] == [("v0", "stale-version")]
    assert len(list_receipts(engine, ReceiptFilter(work_key=key))) == 2
    future = datetime.now(UTC) + timedelta(hours=1)
    assert list_receipts(engine, ReceiptFilter(work_key=key, since=future)) == []


def test_explain_finds_a_work_key_that_was_only_ever_rejected(engine):
    key = f"acme/github:acme/api#{uuid.uuid4().int % 10**6}:review"
    SqlIntakeStore(engine).decide(_draft(key, "old", uuid.uuid4().hex, Outcome.REJECT, Reason.STALE_VERSION))
    assert [r.reason for r in explain(engine, key).receipts] == ["stale-version"]


def test_explain_lists_each_model_call_reservation_and_how_it_ended(engine):
    from ledger import DayBudgets, StepRef

    key = f"acme/github:acme/api#{uuid.uuid4().int % 10**6}:review"
    generation = SqlIntakeStore(engine).decide(_draft(key, "v1", uuid.uuid4().hex)).generation
    budgets = DayBudgets(engine, 100.0, {}, 100.0)
    crashed = budgets.reserve("acme", key, 0.3, ref=StepRef(key, "v1", generation, 1, 1))
    budgets.charge_estimate(crashed, "fate unknown: worker lost")
    answered = budgets.reserve("acme", key, 0.3, ref=StepRef(key, "v1", generation, 1, 2))
    budgets.settle(answered, 0.01)
    chain = explain(engine, key)
    assert [(r.id, r.status, r.attempt, r.spent_usd) for r in chain.reservations] == [
        (crashed, "estimated", 1, 0.3), (answered, "settled", 2, 0.01)]
