"""The idempotency ledger's state machine on SQLite and PostgreSQL."""

from __future__ import annotations

import uuid

from ledger import BeginState, SideEffectLedger


def _begin(ledger: SideEffectLedger, key: str):
    return ledger.begin(key, work_key="wk", operation="post", target_version="v1", generation=1)


def test_first_begin_is_new_then_in_flight_until_done(engine):
    ledger, key = SideEffectLedger(engine), f"op_{uuid.uuid4().hex}"
    assert _begin(ledger, key).state == BeginState.NEW
    again = _begin(ledger, key)
    assert (again.state, again.attempts) == (BeginState.IN_FLIGHT, 2)
    ledger.complete(key, "c-1", {"comment_id": 1})
    done = _begin(ledger, key)
    assert (done.state, done.external_id, done.result) == (BeginState.DONE, "c-1", {"comment_id": 1})


def test_failed_stays_failed_and_done_is_not_overwritten(engine):
    ledger, key = SideEffectLedger(engine), f"op_{uuid.uuid4().hex}"
    _begin(ledger, key)
    ledger.fail(key, "422 validation failed")
    ledger.complete(key, "late", {})  # only an in_flight entry can finish
    state = _begin(ledger, key)
    assert (state.state, state.error, state.external_id) == (BeginState.FAILED, "422 validation failed", None)


def test_older_generation_is_fenced_and_recorded(engine):
    from datetime import UTC, datetime

    from intake.decision import Outcome, Reason
    from intake.envelope import TriggerKind
    from intake.receipts import ReceiptDraft
    from ledger import SqlIntakeStore

    key = f"acme/github:acme/api#{uuid.uuid4().int % 10**6}:review"
    store = SqlIntakeStore(engine)
    for version in ("v1", "v2"):  # two admissions: generations 1 and 2
        store.decide(ReceiptDraft(outcome=Outcome.ACCEPT, reason=Reason.ADMITTED, message="", source="github",
                                  trigger_kind=TriggerKind.EVENT, received_at=datetime.now(UTC),
                                  delivery_id=uuid.uuid4().hex, work_key=key, input_version=version, tenant="t"))
    ledger = SideEffectLedger(engine)
    stale = ledger.begin(f"op_{uuid.uuid4().hex}", work_key=key, operation="post", target_version="v1", generation=1)
    assert stale.state == BeginState.FENCED and "older" in stale.error
    fresh_key = f"op_{uuid.uuid4().hex}"
    assert ledger.begin(fresh_key, work_key=key, operation="post", target_version="v2",
                        generation=2).state == BeginState.NEW
