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


def test_the_entry_names_the_attempt_that_claimed_it_last_and_its_admissions_key_and_policy(engine):
    from datetime import UTC, datetime

    from intake.decision import Outcome, Reason
    from intake.envelope import PullRequestRef, TriggerKind
    from intake.capacity import CapacityRequest
    from intake.policy import Policy
    from intake.ports import CapacityContext
    from intake.receipts import ReceiptDraft
    from ledger import AttemptIdentity, SqlIntakeStore

    key = f"acme/github:acme/api#{uuid.uuid4().int % 10**6}:review"
    ctx = CapacityContext(CapacityRequest("acme", 3, concurrency_key="repo:acme/api"), payload={})
    admitted = SqlIntakeStore(engine, policy=Policy("p9")).decide(ReceiptDraft(
        outcome=Outcome.ACCEPT, reason=Reason.ADMITTED, message="", source="github", trigger_kind=TriggerKind.EVENT,
        received_at=datetime.now(UTC), delivery_id=uuid.uuid4().hex, work_key=key, input_version="v1",
        tenant="acme", target_id=PullRequestRef("acme", "api", 1).target_id), ctx)
    ledger, op = SideEffectLedger(engine), f"op_{uuid.uuid4().hex}"
    for attempt in (1, 2):  # attempt 1 died in flight; attempt 2 takes the entry over
        ledger.begin(op, work_key=key, operation="post", target_version="v1", generation=admitted.generation,
                     attempt=AttemptIdentity("agent/" + key, "run-1", attempt))
    row = ledger.get(op)
    assert (row.status, row.attempts) == ("in_flight", 2)
    assert (row.workflow_id, row.run_id, row.activity_attempt) == ("agent/" + key, "run-1", 2)
    assert (row.concurrency_key, row.policy_version) == ("repo:acme/api", "p9")


def test_only_the_claim_that_holds_the_entry_finishes_it(engine):
    """Attempt 1 stalls with its call out; attempt 2 takes the entry over and performs. Attempt 1's
    late 422 ("already exists") must not mark failed what attempt 2 did, nor its late success
    overwrite attempt 2's result."""
    ledger, key = SideEffectLedger(engine), f"op_{uuid.uuid4().hex}"
    first = _begin(ledger, key)
    second = _begin(ledger, key)
    assert (first.attempts, second.attempts) == (1, 2)
    assert not ledger.fail(key, "422 already exists (stale attempt 1)", claim=first.attempts)
    assert ledger.complete(key, "c-2", {"comment_id": 2}, claim=second.attempts)
    assert not ledger.complete(key, "c-1", {"comment_id": 1}, claim=first.attempts)
    done = _begin(ledger, key)
    assert (done.state, done.external_id, done.result) == (BeginState.DONE, "c-2", {"comment_id": 2})


def test_an_admission_committed_after_the_claim_fences_it_before_the_call(engine):
    """``begin`` fences an older generation only when it claims; an admission that commits after
    it (during a slow reconcile, say) shows in :meth:`SideEffectLedger.standing`, and the entry
    given up with ``fence`` is taken over by the newer generation's begin."""
    from datetime import UTC, datetime

    from intake.decision import Outcome, Reason
    from intake.envelope import TriggerKind
    from intake.receipts import ReceiptDraft
    from ledger import SqlIntakeStore

    key = f"acme/github:acme/api#{uuid.uuid4().int % 10**6}:review"
    store = SqlIntakeStore(engine)

    def admit(version: str):
        return store.decide(ReceiptDraft(outcome=Outcome.ACCEPT, reason=Reason.ADMITTED, message="", source="github",
                                         trigger_kind=TriggerKind.EVENT, received_at=datetime.now(UTC),
                                         delivery_id=uuid.uuid4().hex, work_key=key, input_version=version,
                                         tenant="t"))

    first = admit("v1")
    ledger, op = SideEffectLedger(engine), f"op_{uuid.uuid4().hex}"
    claim = ledger.begin(op, work_key=key, operation="post", target_version="v1", generation=first.generation)
    assert claim.state == BeginState.NEW
    assert ledger.standing(op, claim.attempts).held
    second = admit("v2")
    standing = ledger.standing(op, claim.attempts)
    assert (standing.held, standing.newer_generation) == (False, second.generation)
    assert not ledger.holds(op, claim.attempts)
    assert ledger.fence(op, "superseded", claim=claim.attempts)
    taken = ledger.begin(op, work_key=key, operation="post", target_version="v1", generation=second.generation)
    assert (taken.state, taken.attempts) == (BeginState.IN_FLIGHT, 2)  # the newer generation reconciles first
    assert ledger.standing(op, taken.attempts).held
