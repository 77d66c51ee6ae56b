"""Generations only move forward: the pure claim decision, and the claim activity on both ledgers."""

from __future__ import annotations

import uuid

import pytest
from temporalio.testing import ActivityEnvironment

from activities.work_ledger import WorkLedgerActivities
from intake.policy import Policy
from ledger import SqlIntakeStore, WorkStore
from tests.ledger.test_queries import _draft
from workflows.claims import ClaimRequest, ClaimVerdict, LedgerStanding, decide_claim


@pytest.mark.parametrize("standing, seen, verdict, reason", [
    (LedgerStanding(), 0, ClaimVerdict.RUN, ""),  # an order that bypassed intake
    (LedgerStanding(2, "v2", 2, "admitted"), 2, ClaimVerdict.RUN, ""),
    (LedgerStanding(3, "v3", 2, "admitted"), 2, ClaimVerdict.SUPERSEDED, "superseded by v3 (generation 3)"),
    (LedgerStanding(2, "v2", 2, "admitted"), 4, ClaimVerdict.SUPERSEDED, "superseded by v4 (generation 4)"),
    (LedgerStanding(), 3, ClaimVerdict.SUPERSEDED, "superseded by v4 (generation 3)"),
    (LedgerStanding(2, "v2", 2, "done"), 2, ClaimVerdict.SKIP, "already ended done (generation 2)"),
    (LedgerStanding(5, "v5", 2, "superseded"), 2, ClaimVerdict.SKIP, "already ended superseded (generation 2)"),
    (LedgerStanding(3, "v2", 3, "done"), 2, ClaimVerdict.SUPERSEDED, "superseded by v2 (generation 3)"),
])
def test_claim_verdicts(standing, seen, verdict, reason):
    claim = decide_claim(ClaimRequest("wk", "v2", 2, seen, "v4"), standing)
    assert (claim.verdict, claim.reason) == (verdict, reason)


async def test_the_claim_activity_reads_the_ledger(engine):
    key = f"acme/github:acme/api#{uuid.uuid4().int % 10**6}:review"
    store = SqlIntakeStore(engine)
    first = store.decide(_draft(key, "v1", uuid.uuid4().hex)).generation
    claim = ActivityEnvironment().run
    activities = WorkLedgerActivities(WorkStore(engine))
    assert (await claim(activities.claim_order, ClaimRequest(key, "v1", first))).verdict == ClaimVerdict.RUN
    WorkStore(engine).record_outcome(work_key=key, input_version="v1", generation=first, status="done",
                                     run_id="r1", result={"steps": 3})
    done = await claim(activities.claim_order, ClaimRequest(key, "v1", first))
    assert (done.verdict, done.reason) == (ClaimVerdict.SKIP, f"already ended done (generation {first})")
    second = store.decide(_draft(key, "v2", uuid.uuid4().hex)).generation
    stale = await claim(activities.claim_order, ClaimRequest(key, "v0", first))
    assert (stale.verdict, stale.reason) == (ClaimVerdict.SUPERSEDED, f"superseded by v2 (generation {second})")


def _admitted(**kw) -> LedgerStanding:
    from workflows.claims import AdmissionReceipt
    receipt = AdmissionReceipt(**{"outcome": "accept", "work_key": "wk", "input_version": "v2", "generation": 2,
                                  "tenant": "acme", **kw})
    return LedgerStanding(2, "v2", 2, "admitted", version_receipt_id="r2", receipt=receipt, require_admission=True)


@pytest.mark.parametrize("standing, receipt_id, reason", [
    (_admitted(), "r2", None),
    (LedgerStanding(require_admission=True), "r2", "unadmitted:no-admission"),
    (_admitted(), "r-forged", "unadmitted:receipt-mismatch"),
    (_admitted(outcome="reject"), "r2", "unadmitted:receipt-mismatch"),
    (_admitted(work_key="other"), "r2", "unadmitted:receipt-mismatch"),
    (_admitted(input_version="v9"), "r2", "unadmitted:receipt-mismatch"),
    (_admitted(generation=1), "r2", "unadmitted:receipt-mismatch"),
    (_admitted(tenant="globex"), "r2", "unadmitted:identity-mismatch"),
])
def test_admission_is_required_when_both_sides_ask(standing, receipt_id, reason):
    req = ClaimRequest("wk", "v2", 2, tenant="acme", receipt_id=receipt_id, require_admission=True)
    claim = decide_claim(req, standing)
    assert (claim.verdict, claim.reason or None) == ((ClaimVerdict.REFUSED, reason) if reason else (ClaimVerdict.RUN, None))
    unpatched = decide_claim(ClaimRequest("wk", "v2", 2, tenant="acme", receipt_id=receipt_id), standing)
    assert unpatched.verdict == ClaimVerdict.RUN  # a run started before the patch keeps its old rule


async def test_the_claim_activity_refuses_what_intake_did_not_admit(engine):
    owner = f"o{uuid.uuid4().hex[:8]}"
    key = f"acme/github:{owner}/api#7:review"
    decision = SqlIntakeStore(engine).decide(_draft(key, "v1", uuid.uuid4().hex))
    claim = ActivityEnvironment().run
    activities = WorkLedgerActivities(WorkStore(engine))

    def req(**kw):
        base = dict(work_key=key, input_version="v1", generation=decision.generation, tenant="acme",
                    receipt_id=decision.receipt_id, owner=owner, repo="api", number=7, require_admission=True)
        return ClaimRequest(**{**base, **kw})
    assert (await claim(activities.claim_order, req())).verdict == ClaimVerdict.RUN
    for forged, reason in [(req(receipt_id="x" * 32), "unadmitted:receipt-mismatch"),
                           (req(input_version="v0"), "unadmitted:no-admission"),
                           (req(repo="other"), "unadmitted:identity-mismatch"),
                           (req(owner="ACME-not"), "unadmitted:identity-mismatch")]:
        assert (await claim(activities.claim_order, forged)).reason == reason


async def test_an_outcome_recorded_twice_notes_the_receipt_once(engine):
    """A local ledger write can run again (a lost marker, a cancel re-recording the order): the second
    write of the same run's end appends no second note to the receipt and writes nothing."""
    from ledger._queries import explain
    from workflows.contracts import RunOutcome, RunStatus
    key = f"acme/github:acme/api#{uuid.uuid4().int % 10**6}:review"
    decided = SqlIntakeStore(engine).decide(_draft(key, "v1", uuid.uuid4().hex))
    activities = WorkLedgerActivities(WorkStore(engine))
    run = ActivityEnvironment().run
    outcome = RunOutcome(key, "v1", decided.generation, RunStatus.SUPERSEDED, "superseded by v2 (generation 9)",
                         receipt_id=decided.receipt_id, tenant="acme", source="github")
    assert await run(activities.record_run_outcome, outcome) is True
    assert await run(activities.record_run_outcome, outcome) is True
    [receipt] = explain(engine, key).receipts
    assert receipt.message.count("; run superseded by v2") == 1, receipt.message


async def test_a_claim_asked_for_the_policy_says_whether_it_is_the_orders(engine):
    """Patch ``lean-loop-steps-2``: a claim that lets the order run says whether the worker's policy version
    is the one the order was admitted under (then the re-check, which would permit it unread, is skipped);
    a claim not asked, one that does not let it run, or a worker without a policy never says so."""
    key = f"acme/github:acme/api#{uuid.uuid4().int % 10**6}:review"
    first = SqlIntakeStore(engine).decide(_draft(key, "v1", uuid.uuid4().hex)).generation
    claim = ActivityEnvironment().run
    worker = WorkLedgerActivities(WorkStore(engine), policy=Policy(version="2026-12-07.1"))

    async def unchanged(activities: WorkLedgerActivities, version: str | None, ask: bool = True) -> bool:
        answer = await claim(activities.claim_order, ClaimRequest(key, "v1", first, policy_version=version,
                                                                  ask_policy=ask))
        return answer.policy_unchanged

    assert await unchanged(worker, "2026-12-07.1")
    assert await unchanged(worker, None)  # a row that does not know its version counts as unchanged, as in the re-check
    assert not await unchanged(worker, "2026-11-30.1")  # admitted under another version: the re-check runs
    assert not await unchanged(worker, "2026-12-07.1", ask=False)  # a workflow before the patch never skips
    assert not await unchanged(WorkLedgerActivities(WorkStore(engine)), "2026-12-07.1")
    stale = await claim(worker.claim_order, ClaimRequest(key, "v1", first, newest_seen=first + 1,
                                                         newest_seen_version="v9",
                                                         policy_version="2026-12-07.1", ask_policy=True))
    assert stale.verdict != ClaimVerdict.RUN and not stale.policy_unchanged
