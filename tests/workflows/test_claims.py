"""Generations only move forward: the pure claim decision, and the claim activity on both ledgers."""

from __future__ import annotations

import uuid

import pytest
from temporalio.testing import ActivityEnvironment

from activities.work_ledger import WorkLedgerActivities
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
