"""A deferred item keeps its task: the queued payload names the work key, and re-deciding it rebuilds
the candidate for that key's task (a key from before the registry is a review); the claim check
accepts an order whose tenant and target make its key, whatever the task."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from activities.work_ledger import key_matches_order
from intake.capacity.payload import from_payload, to_payload
from intake.envelope import Envelope, PullRequestRef, TriggerKind
from intake.identity import review_candidate
from tasks.triage.target import triage_candidate
from workflows.claims import ClaimRequest

NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)


def _envelope() -> Envelope:
    return Envelope(id="d-1", source="github", type="issues.opened", subject="Acme/API#7", time=NOW,
                    received_at=NOW, trigger_kind=TriggerKind.EVENT, tenant="acme")


@pytest.mark.parametrize("candidate", [
    triage_candidate("acme", PullRequestRef("Acme", "API", 7), "2026-11-29T10:00:00Z"),
    review_candidate("acme", PullRequestRef("Acme", "API", 7), "ab" * 20, draft=True),
])
def test_a_queued_candidate_comes_back_for_its_own_task(candidate):
    _, back = from_payload(to_payload(_envelope(), candidate))
    assert (back.work_key, back.task, back.input_version, back.draft) == (
        candidate.work_key, candidate.task, candidate.input_version, candidate.draft)


def test_a_payload_queued_before_tenancy_and_the_registry_is_a_review():
    payload = to_payload(_envelope(), review_candidate("acme", PullRequestRef("acme", "api", 7), "ab" * 20))
    payload["candidate"]["work_key"] = "github:acme/api#7:review"
    assert from_payload(payload)[1].work_key == "acme/github:acme/api#7:review"


@pytest.mark.parametrize("key, ok", [
    ("acme/github:acme/api#7:triage", True),
    ("acme/github:acme/api#7:review", True),
    ("acme/github:acme/other#7:triage", False),
    ("beta/github:acme/api#7:triage", False),
])
def test_the_claim_check_matches_the_order_to_its_key_for_any_task(key: str, ok: bool):
    req = ClaimRequest(work_key=key, tenant="acme", owner="acme", repo="api", number=7, input_version="v",
                       generation=1, receipt_id="r")
    assert key_matches_order(req, key) is ok
