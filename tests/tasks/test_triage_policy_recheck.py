"""The policy re-check before a triage order's first step (``sluicegate.intake.recheck_policy``) reads
the order's own target — the issue, through the triage reader — and records a refusal under the
triage work key. Real parts: the activity in ``ActivityEnvironment``, the forge simulator over HTTP,
the ledger in SQL (both backends)."""

from __future__ import annotations

import uuid

from sqlmodel import Session
from temporalio.testing import ActivityEnvironment

from activities.policy_recheck import PolicyRecheckActivities
from intake.forge_reader import ForgeTargetReader
from intake.policy import Policy
from ledger import Receipt, SqlIntakeStore
from sluicegate.forge.client import ForgeClient
from tasks.triage.target import IssueReader
from tests.support.sims import FORGE_TOKEN
from workflows.policy_step import PolicyCheckRequest


def _request(name: str) -> PolicyCheckRequest:
    return PolicyCheckRequest(f"acme/github:acme/{name}#5:triage", "acme", "acme", name, 5, "2026-11-29T10:00:00Z",
                              1, "old-policy", "event", "github", f"d-{uuid.uuid4().hex}", 3)


def _stats(sims) -> dict:
    return sims.forge_ctl("GET", "/stats").json()


async def test_a_triage_order_is_rechecked_against_its_issue(engine, sims):
    name = f"p{uuid.uuid4().hex[:8]}"
    sims.forge_ctl("POST", f"/issues/acme/{name}/5", json={"title": "t", "updated_at": "2026-11-29T10:00:00Z"})
    forge = ForgeClient(sims.forge.base_url, FORGE_TOKEN)
    try:
        recheck = PolicyRecheckActivities(Policy(version="new-policy"), ForgeTargetReader(forge),
                                          SqlIntakeStore(engine), task_readers={"triage": IssueReader(forge)})
        before = _stats(sims)
        permitted = await ActivityEnvironment().run(recheck.recheck_policy, _request(name))
        after = _stats(sims)
        refusing = PolicyRecheckActivities(Policy(version="new-policy", refuse_repositories=(f"acme/{name}",)),
                                           ForgeTargetReader(forge), SqlIntakeStore(engine),
                                           task_readers={"triage": IssueReader(forge)})
        refused = await ActivityEnvironment().run(refusing.recheck_policy, _request(name))
    finally:
        await forge.aclose()
    assert permitted.permitted and permitted.policy_version == "new-policy"
    assert after["issue_reads"]["json"] + after["issue_reads"]["not_modified"] == (
        before["issue_reads"]["json"] + before["issue_reads"]["not_modified"] + 1)
    assert after["pull_reads"] == before["pull_reads"]  # never the pull request of the same number
    assert (refused.permitted, refused.reason) == (False, "policy:repository-refused")
    with Session(engine) as s:
        receipt = s.get(Receipt, refused.receipt_id)
    assert receipt is not None
    assert (receipt.work_key, receipt.reason) == (f"acme/github:acme/{name}#5:triage", "policy:repository-refused")
