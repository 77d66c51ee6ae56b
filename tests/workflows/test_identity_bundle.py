"""The whole identity bundle, through the stack: a delivery decided by the real intake service
(ledger on SQLite and PostgreSQL, forge simulator over HTTP, capacity gate, Temporal admitter) runs
on the real worker; its receipt and its side effect carry delivery, work key and version,
generation, workflow and run id, activity attempt, concurrency key, operation key and policy
version, and ``starter.py explain`` shows them.
"""

from __future__ import annotations

import uuid
from contextlib import AsyncExitStack
from datetime import UTC, datetime

from sqlmodel import Session, select

import ledger
from activities.keys import operation_key
from intake.decision import Outcome
from intake.envelope import Envelope, PullRequestRef, TriggerKind
from intake.identity import review_candidate
from sluicegate.temporal.admitter import TemporalAdmitter
from ledger import Receipt, SideEffect
from sluicegate.services.intake import intake_service
from sluicegate.forge.client import ForgeClient
from tests.support.sims import FORGE_TOKEN, settings_for
from tests.test_status_cli import _starter
from worker import create_worker
from workflows.contracts import AgentLoopResult


async def test_a_run_records_the_identity_bundle_on_its_receipt_and_side_effect(
        temporal_env, sims, ledger_url, task_queue):
    settings = settings_for(sims, ledger_url, TEMPORAL_TASK_QUEUE=task_queue, SLUICEGATE__INTAKE__POLICY_VERSION="v7")
    ref, head = PullRequestRef("acme", f"b{uuid.uuid4().hex[:8]}", 3), uuid.uuid4().hex + "0" * 8
    sims.forge_ctl("POST", f"/pulls/{ref.owner}/{ref.repo}/{ref.number}",
                   json={"state": "open", "head_sha": head, "title": "t", "diff": "diff --git a/x b/x\n+x\n"})
    now = datetime.now(UTC)
    envelope = Envelope(id=str(uuid.uuid4()), source="github", type="pull_request.opened", subject=ref.target_id,
                        time=now, received_at=now, trigger_kind=TriggerKind.EVENT, tenant="acme")
    engine = ledger.make_engine(ledger_url)
    forge = ForgeClient(sims.forge.base_url, FORGE_TOKEN, timeout_seconds=5)
    try:
        async with AsyncExitStack() as stack:
            async with await create_worker(temporal_env.client, settings, stack, task_queue, search_attributes=False):
                service = intake_service(settings, engine, forge,
                                         TemporalAdmitter(temporal_env.client, settings, search_attributes=False))
                decision = await service.submit(envelope, review_candidate("acme", ref, head))
                assert decision.outcome == Outcome.ACCEPT, decision
                result = await temporal_env.client.get_workflow_handle(
                    decision.workflow_id, result_type=AgentLoopResult).result()
        assert [o.status for o in result.orders] == ["done"]
        key = f"repo:acme/{ref.repo}"
        with Session(engine) as s:
            receipt = s.get(Receipt, decision.receipt_id)
            [effect] = s.exec(select(SideEffect).where(SideEffect.work_key == decision.work_key)).all()
        assert (receipt.delivery_id, receipt.work_key, receipt.input_version, receipt.generation) == (
            envelope.id, decision.work_key, head, decision.generation)
        assert (receipt.workflow_id, receipt.run_id) == (decision.workflow_id, decision.run_id)
        assert (receipt.concurrency_key, receipt.policy_version) == (key, "v7")
        assert receipt.activity_attempt is None  # decided by the API path, not inside an activity
        assert effect.operation_key == operation_key(decision.work_key, "post_review_comment", head)
        assert (effect.status, effect.target_version, effect.generation) == ("done", head, decision.generation)
        assert (effect.workflow_id, effect.run_id, effect.activity_attempt) == (
            decision.workflow_id, decision.run_id, 1)
        assert (effect.concurrency_key, effect.policy_version) == (key, "v7")
        assert receipt.operation_keys == [effect.operation_key]
    finally:
        await forge.aclose()
        engine.dispose()
    shown = _starter(ledger_url, "explain", decision.work_key)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout  # rich wraps long lines: look for each part of the bundle on the receipt and the effect
    assert out.count(f"concurrency_key={key}") == 2 and out.count("policy=v7") == 2
    assert "activity_attempt=1" in out and out.count(f"run={decision.run_id}") >= 3  # receipt, run, effect
