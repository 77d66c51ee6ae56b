"""A repeat of a delivery (``duplicate-delivery``) is a 200 that tells the original's state from
the ledger, truthfully: ``queued`` while a waiting deferred item holds the original receipt,
``admitted`` once the original receipt admitted a workflow. Both ledgers; no row for the repeat."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

from sqlmodel import Session, select

from intake.capacity import CapacityRequest
from intake.decision import Outcome, Reason
from intake.envelope import TriggerKind
from intake.ports import CapacityContext
from intake.receipts import ReceiptDraft
from ledger import SqlIntakeStore, _deferred
from ledger._capacity_models import DeferredItem
from webhook_api._responses import decision_response


def _draft(outcome: Outcome) -> ReceiptDraft:
    tenant = f"rep-{uuid.uuid4().hex[:8]}"
    key = f"{tenant}/github:{tenant}/api#1:review"
    reason = Reason.SOURCE_UNAVAILABLE if outcome == Outcome.DEFER else Reason.ADMITTED
    return ReceiptDraft(outcome=outcome, reason=reason, message="m", trigger_kind=TriggerKind.EVENT, source="github",
                        received_at=datetime.now(UTC), delivery_id=str(uuid.uuid4()), tenant=tenant,
                        work_key=key, target_id=key, input_version="v1", retry_after_seconds=20.0)


def _answer(store: SqlIntakeStore, draft: ReceiptDraft) -> tuple[int, dict]:
    response = decision_response(store.reject_if_delivery_seen(draft))
    return response.status_code, json.loads(response.body)


def _queued(store: SqlIntakeStore, draft: ReceiptDraft):
    ctx = CapacityContext(CapacityRequest(draft.tenant, 3), {"envelope": {"id": "x"}, "candidate": {}})
    first = store.decide(draft, ctx)
    assert first.outcome == Outcome.DEFER
    return first


def test_a_redelivery_of_a_queued_delivery_says_it_is_queued(engine):
    store = SqlIntakeStore(engine)
    draft = _draft(Outcome.DEFER)
    first = _queued(store, draft)
    status, body = _answer(store, draft)
    assert (status, body["reason"], body["receipt_id"]) == (200, "duplicate-delivery", first.receipt_id)
    assert (body["queued"], body["admitted"]) == (True, False)


def test_a_redelivery_after_the_queued_item_left_the_queue_is_not_queued(engine):
    store = SqlIntakeStore(engine)
    draft = _draft(Outcome.DEFER)
    first = _queued(store, draft)
    with Session(engine) as s, s.begin():
        [item] = s.exec(select(DeferredItem).where(DeferredItem.receipt_id == first.receipt_id)).all()
        _deferred.finish(s, item.id, "dropped", None, "test")
    status, body = _answer(store, draft)
    assert (status, body["reason"], body["queued"], body["admitted"]) == (200, "duplicate-delivery", False, False)


def test_a_redelivery_of_an_admitted_delivery_says_it_was_admitted(engine):
    store = SqlIntakeStore(engine)
    draft = _draft(Outcome.ACCEPT)
    first = store.decide(draft)
    assert first.outcome == Outcome.ACCEPT
    status, body = _answer(store, draft)
    assert (body["queued"], body["admitted"]) == (False, False)  # accepted, not yet started
    store.mark_admitted(first, "wf-1", "run-1")
    status, body = _answer(store, draft)
    assert (status, body["reason"], body["receipt_id"]) == (200, "duplicate-delivery", first.receipt_id)
    assert (body["queued"], body["admitted"], body["workflow_id"]) == (False, True, "wf-1")
