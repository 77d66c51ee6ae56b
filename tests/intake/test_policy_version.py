"""Policy version is live for queued and done work, with the real intake adapters: the ledger store
(SQLite and PostgreSQL), the forge simulator read over HTTP, the Temporal admitter, the dispatcher.

* a delivery queued under policy ``v1`` is re-decided at dispatch under ``v2``: refused, its
  receipt names ``v2``;
* a version that ended ``done`` is not admitted again after a policy change unless
  ``intake.rerun_done_on_policy_change`` says so (and then its review is posted again).
"""

from __future__ import annotations

import json
import uuid
from contextlib import asynccontextmanager
from datetime import UTC, datetime

import pytest
from sqlmodel import Session, select

import ledger
from intake.decision import Outcome, Reason
from intake.envelope import Envelope, PullRequestRef, TriggerKind
from intake.identity import review_candidate
from intake.ports import Admission
from sluicegate.temporal.admitter import TemporalAdmitter, work_order_for
from ledger import DeferredItem, DeferredQueue, Receipt, WorkStore
from sluicegate.services.intake import intake_service
from sluicegate.forge.client import ForgeClient
from tests.support.deferred import dispatch_until_decided
from tests.support.sims import FORGE_TOKEN, settings_for


def _fresh_pull(sims) -> tuple[PullRequestRef, str]:
    """A pull request of its own under acme (in the github source's scope)."""
    ref, head = PullRequestRef("acme", f"p{uuid.uuid4().hex[:8]}", 7), uuid.uuid4().hex + "0" * 8
    sims.forge_ctl("POST", f"/pulls/{ref.owner}/{ref.repo}/{ref.number}",
                   json={"state": "open", "head_sha": head, "title": "t", "diff": "diff --git a/x b/x\n+x\n"})
    return ref, head


def _event(ref: PullRequestRef, head: str):
    now = datetime.now(UTC)
    env = Envelope(id=str(uuid.uuid4()), source="github", type="pull_request.synchronize", subject=ref.target_id,
                   time=now, received_at=now, trigger_kind=TriggerKind.EVENT, tenant="acme")
    return env, review_candidate("acme", ref, head)


@asynccontextmanager
async def service_under(sims, url: str, client, **policy: str):
    settings = settings_for(sims, url, SLUICEGATE__INTAKE__SOURCE_RETRY_SECONDS="0.2",
                            **{f"SLUICEGATE__INTAKE__{k.upper()}": v for k, v in policy.items()})
    engine = ledger.make_engine(url)
    forge = ForgeClient(sims.forge.base_url, FORGE_TOKEN, timeout_seconds=2)
    try:
        yield intake_service(settings, engine, forge, TemporalAdmitter(client, settings, search_attributes=False)), \
            engine, settings
    finally:
        await forge.aclose()
        engine.dispose()


def _receipt(engine, receipt_id: str) -> Receipt:
    with Session(engine) as s:
        return s.get(Receipt, receipt_id)


async def test_a_queued_delivery_is_re_decided_at_dispatch_under_the_new_policy(sims, ledger_url, temporal_env):
    ref, head = _fresh_pull(sims)
    sims.forge_ctl("POST", "/faults", json={"method": "GET", "path": f"/{ref.repo}/pulls/7$", "status": 503,
                                            "times": 1})
    async with service_under(sims, ledger_url, temporal_env.client, policy_version="v1") as (v1, engine, _):
        queued = await v1.submit(*_event(ref, head))
        assert (queued.outcome, queued.reason, queued.policy_version) == (Outcome.DEFER, Reason.SOURCE_UNAVAILABLE,
                                                                          "v1")
        defer = _receipt(engine, queued.receipt_id)
        assert (defer.policy_version, defer.concurrency_key) == ("v1", f"repo:acme/{ref.repo}")
    refuse = json.dumps([f"acme/{ref.repo}"])
    async with service_under(sims, ledger_url, temporal_env.client, policy_version="v2",
                             policy_refuse_repositories=refuse) as (v2, engine, _):
        with Session(engine) as s:
            [item] = s.exec(select(DeferredItem).where(DeferredItem.receipt_id == queued.receipt_id)).all()
        ended, _ = await dispatch_until_decided(DeferredQueue(engine), v2, item.id)
        final = _receipt(engine, ended.final_receipt_id)
    assert ended.status == "dropped"
    assert (final.outcome, final.reason, final.policy_version) == ("reject", "policy:repository-refused", "v2")
    assert final.message == "refused by policy:repository-refused under policy v2"
    assert final.concurrency_key == f"repo:acme/{ref.repo}"


@pytest.mark.parametrize("rerun", [False, True], ids=["done-stays-done", "policy-reruns-done"])
async def test_a_done_version_is_rerun_after_a_policy_change_only_when_the_policy_says_so(
        sims, ledger_url, temporal_env, rerun):
    ref, head = _fresh_pull(sims)
    async with service_under(sims, ledger_url, temporal_env.client, policy_version="v1",
                             rerun_done_on_policy_change="true") as (v1, engine, _):
        first = await v1.submit(*_event(ref, head))
        assert (first.outcome, first.policy_version) == (Outcome.ACCEPT, "v1")
        WorkStore(engine).record_outcome(work_key=first.work_key, input_version=head, generation=first.generation,
                                         status="done", run_id=first.run_id, result={"reason": "completed"})
        same_policy = await v1.submit(*_event(ref, head))  # no policy change: done stays done
        assert (same_policy.outcome, same_policy.reason) == (Outcome.REJECT, Reason.DUPLICATE_WORK)
    async with service_under(sims, ledger_url, temporal_env.client, policy_version="v2",
                             rerun_done_on_policy_change=str(rerun).lower()) as (v2, engine, settings):
        env, cand = _event(ref, head)
        again = await v2.submit(env, cand)
    if not rerun:
        assert (again.outcome, again.reason, again.policy_version) == (Outcome.REJECT, Reason.DUPLICATE_WORK, "v2")
        return
    assert (again.outcome, again.reason, again.policy_version) == (Outcome.ACCEPT, Reason.ADMITTED, "v2")
    assert again.generation == first.generation + 1
    assert again.override == "policy-rerun: done under policy v1, now v2"
    order = work_order_for(Admission(again, env, cand), settings, search_attributes=False)
    assert (order.policy_version, order.effect_discriminator) == ("v2", f"rerun-gen{again.generation}")


def test_an_admission_relayed_by_the_outbox_keeps_the_policy_version_that_decided_it(sims, engine):
    from intake.outbox import admission_from
    from intake.policy import Policy
    from intake.receipts import draft_for

    ref, head = _fresh_pull(sims)
    env, cand = _event(ref, head)
    accepted = ledger.SqlIntakeStore(engine, policy=Policy("v1")).decide(
        draft_for(env, cand, Outcome.ACCEPT, Reason.ADMITTED, "admitting"))  # starting the run "failed"
    assert accepted.policy_version == "v1"
    [pending] = [p for p in ledger.SqlIntakeStore(engine, policy=Policy("v2")).pending_admissions(0, limit=10_000)
                 if p.receipt_id == accepted.receipt_id]
    settings = settings_for(sims, "sqlite://", SLUICEGATE__INTAKE__POLICY_VERSION="v2")
    order = work_order_for(admission_from(pending), settings, search_attributes=False)
    assert order.policy_version == "v1"  # so its run re-checks the policy before its first step
