"""ScanWorkflow started directly (no schedule) under time skipping, with the real worker wiring:
forge simulator → real intake (ledger, freshness, dedupe) → signal-with-start → agent runs.

Each test copies the forge fixtures under an owner of its own, so its work keys (and the
agent workflow ids derived from them) never meet another test's on the shared server."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.testing import ActivityEnvironment

from activities.intake_activity import IntakeActivities
from intake.decision import Outcome, Reason
from intake.envelope import Envelope, PullRequestRef, TriggerKind
from intake.forge_reader import ForgeTargetReader
from intake.identity import review_candidate
from intake.service import IntakeService
from sluicegate.temporal.admitter import TemporalAdmitter
from intake.unread import UnreadPolicy
from ledger import DeferredQueue, SqlIntakeStore, WatermarkStore
from sluicegate.forge.client import ForgeClient
from sluicegate.forge.retry_after import JITTER_FRACTION
from sluicegate.config.tenancy import scope_rules
from tests.scans.conftest import agent_results, eventually, running_worker
from tests.support.sims import FORGE_TOKEN
from workflows.scan import delivery_id_for
from workflows.scan_contracts import NOTHING_CHANGED, SCAN_WORKFLOW, IntakeRequest, ScanRequest, ScanResult, scan_source

PR42_HEAD = "ef9d10e0c793feda607897bea014358f22d8b670"
PR44_HEAD = "bfc1b2c6a7697af60a9acbd1352b4c663a990925"
WEB7_HEAD = "2b1e2bc6ba9117b031fb7dd60abdafac968cb8a0"
NEW_HEAD = "c0ffee00" * 5


def _request(ctx, **kw) -> ScanRequest:
    return ScanRequest(**{"scan_id": f"t-{uuid.uuid4().hex[:8]}", "tenant": "acme",
                          "repos": [ctx.repo("api"), ctx.repo("web")], **kw})


def _stamp(pull: dict) -> str:
    return datetime.fromisoformat(pull["updated_at"].replace("Z", "+00:00")).isoformat()


def _expected(ctx, repo: str, heads: dict[int, str]) -> tuple[str, set[str]]:
    """The watermark after deciding ``heads``: the newest updated_at and who was decided at it."""
    stamps = {n: _stamp(ctx.pull(repo, n)) for n in heads}
    newest = max(stamps.values())
    return newest, {f"{n}@{h}" for n, h in heads.items() if stamps[n] == newest}


async def _scan(client, ctx, req: ScanRequest) -> ScanResult:
    return await client.execute_workflow(SCAN_WORKFLOW, req, id=f"scan/{req.scan_id}-{uuid.uuid4().hex[:6]}",
                                         task_queue=ctx.task_queue, result_type=ScanResult)


async def test_scan_admits_changes_then_records_no_work_then_sees_a_push(temporal_env, ctx, sims):
    client, req = temporal_env.client, _request(ctx)
    watermarks = WatermarkStore(ctx.engine)
    async with running_worker(client, ctx, search_attributes=False):
        first = await _scan(client, ctx, req)
        assert first.candidates == 3 and first.no_work_receipt_id is None
        assert [(d.work_key, d.input_version, d.outcome, d.reason) for d in first.decisions] == [
            (ctx.key("api", 42), PR42_HEAD, "accept", "admitted"), (ctx.key("api", 44), PR44_HEAD, "accept", "admitted"),
            (ctx.key("web", 7), WEB7_HEAD, "accept", "admitted")]
        runs = await agent_results(client, [d.workflow_id for d in first.decisions])
        assert [[o.status for o in r.orders] for r in runs] == [["done"]] * 3
        assert sims.model_stats()["calls"] == 9 and len(sims.comments()) == 3

        accepts = ctx.receipts(source=scan_source(req.scan_id))
        assert {(r.outcome, r.trigger_kind, r.event_type) for r in accepts} == {("accept", "schedule",
                                                                                 "scan.pull_request")}
        assert all(r.workflow_id and r.run_id and r.generation == 1 for r in accepts)
        assert {r.work_key for r in accepts} == {ctx.key("api", 42), ctx.key("api", 44), ctx.key("web", 7)}
        api = watermarks.get(req.scan_id, ctx.repo("api"))
        assert (api.updated_at.isoformat(), api.boundary) == _expected(ctx, "api", {42: PR42_HEAD, 44: PR44_HEAD})
        assert watermarks.get(req.scan_id, ctx.repo("web")).updated_at.isoformat() == _stamp(ctx.pull("web", 7))

        # Nothing changed at the forge: one no-work receipt, no decision, no model call.
        second = await _scan(client, ctx, req)
        assert (second.candidates, second.decisions) == (0, [])
        [no_work] = ctx.receipts(id=second.no_work_receipt_id)
        assert (no_work.outcome, no_work.reason, no_work.trigger_kind, no_work.source) == (
            "no-work", NOTHING_CHANGED, "schedule", scan_source(req.scan_id))
        assert sims.model_stats()["calls"] == 9
        assert watermarks.get(req.scan_id, ctx.repo("api")) == api

        # A push moves the head (and updated_at): only that pull request is decided, and admitted.
        ctx.push("api", 44, head_sha=NEW_HEAD)
        third = await _scan(client, ctx, req)
        assert [(d.work_key, d.input_version, d.outcome) for d in third.decisions] == [
            (ctx.key("api", 44), NEW_HEAD, "accept")]
        [run] = await agent_results(client, [third.decisions[0].workflow_id])
        assert run.orders[-1].input_version == NEW_HEAD and run.orders[-1].status == "done"
        assert sims.model_stats()["calls"] == 12
        moved = watermarks.get(req.scan_id, ctx.repo("api"))
        assert moved.updated_at >= api.updated_at and moved.boundary >= {f"44@{NEW_HEAD}"}


async def test_event_then_scan_for_one_version_is_one_run(temporal_env, ctx, sims):
    """The scan builds the webhook path's work key: a version an event admitted is duplicate-work."""
    client, req = temporal_env.client, _request(ctx, max_candidates=10)
    forge = ForgeClient(ctx.settings.forge.base_url, FORGE_TOKEN, timeout_seconds=5)
    service = IntakeService(SqlIntakeStore(ctx.engine), ForgeTargetReader(forge),
                            TemporalAdmitter(client, ctx.settings, search_attributes=False),
                            scope=scope_rules(ctx.settings))
    ref = PullRequestRef(ctx.owner.upper(), "API", 44)  # the webhook's spelling does not matter
    now = datetime.now(UTC)
    try:
        async with running_worker(client, ctx, search_attributes=False):
            event = await service.submit(
                Envelope(id=str(uuid.uuid4()), source="github", type="pull_request.opened", subject=ref.target_id,
                         time=now, received_at=now, trigger_kind=TriggerKind.EVENT, tenant="acme"),
                review_candidate("acme", ref, PR44_HEAD))
            assert (event.outcome, event.work_key) == (Outcome.ACCEPT, ctx.key("api", 44))
            scan = await _scan(client, ctx, req)
            by_key = {d.work_key: (d.outcome, d.reason) for d in scan.decisions}
            assert by_key == {ctx.key("api", 42): ("accept", "admitted"),
                              ctx.key("api", 44): ("reject", str(Reason.DUPLICATE_WORK)),
                              ctx.key("web", 7): ("accept", "admitted")}
            runs = await agent_results(client, [event.workflow_id] + [d.workflow_id for d in scan.decisions
                                                                      if d.outcome == "accept"])
            assert sum(len(r.orders) for r in runs) == 3
            assert sims.model_stats()["by_work"][f"{ctx.key('api', 44)}@{PR44_HEAD}"] == 3
            # A duplicate is still decided: the watermark passes it.
            assert WatermarkStore(ctx.engine).get(req.scan_id, ctx.repo("api")).boundary >= {f"44@{PR44_HEAD}"}
    finally:
        await forge.aclose()


async def test_deferred_candidate_holds_the_watermark_and_is_retried_next_scan(temporal_env, ctx, sims):
    client, req = temporal_env.client, _request(ctx, repos=[ctx.repo("api")])
    sims.forge_ctl("POST", "/faults", json={"method": "GET", "path": f"{ctx.owner}/api/pulls/44$", "status": 503,
                                            "times": 1, "retry_after": 2})
    async with running_worker(client, ctx, search_attributes=False):
        first = await _scan(client, ctx, req)
        assert [(d.work_key, d.outcome, d.reason) for d in first.decisions] == [
            (ctx.key("api", 42), "accept", "admitted"), (ctx.key("api", 44), "defer", "source-unavailable")]
        # queued (verified means durable); re-checked no sooner than the forge asked (2 s), nor than the
        # queue's own first wait
        first_wait = UnreadPolicy().retry_seconds
        assert first.deferred == 1 and max(2, first_wait) <= first.decisions[1].retry_after_seconds <= max(
            2, first_wait) * (1 + JITTER_FRACTION)
        held = WatermarkStore(ctx.engine).get(req.scan_id, ctx.repo("api"))
        # 42 decided; 44 (maybe updated in the same second) is not in the boundary: still a candidate
        assert (held.updated_at.isoformat(), held.boundary) == (_stamp(ctx.pull("api", 42)), {f"42@{PR42_HEAD}"})
        second = await _scan(client, ctx, req)  # the forge answers: the scan's delivery takes the queued item over
        assert [(d.work_key, d.outcome) for d in second.decisions] == [(ctx.key("api", 44), "accept")]
        counts = DeferredQueue(ctx.engine).counts()
        assert counts.get(("acme", "superseded")) == 1 and ("acme", "waiting") not in counts
        await agent_results(client, [d.workflow_id for d in first.decisions + second.decisions
                                     if d.outcome == "accept"])
        done = WatermarkStore(ctx.engine).get(req.scan_id, ctx.repo("api"))
        assert (done.updated_at.isoformat(), done.boundary) == _expected(ctx, "api", {42: PR42_HEAD, 44: PR44_HEAD})


async def test_candidate_cap_leaves_the_rest_for_the_next_scan(temporal_env, ctx, sims):
    client, req = temporal_env.client, _request(ctx, repos=[ctx.repo("api")], max_candidates=1)
    async with running_worker(client, ctx, search_attributes=False):
        first = await _scan(client, ctx, req)
        second = await _scan(client, ctx, req)
        third = await _scan(client, ctx, req)
        await agent_results(client, [d.workflow_id for d in first.decisions + second.decisions])
    assert ([d.work_key for d in first.decisions], first.truncated) == ([ctx.key("api", 42)], [ctx.repo("api")])
    assert ([d.work_key for d in second.decisions], second.truncated) == ([ctx.key("api", 44)], [])
    assert third.decisions == [] and third.no_work_receipt_id is not None


async def test_retried_intake_attempt_is_a_duplicate_delivery_not_a_second_decision(temporal_env, ctx, sims):
    client = temporal_env.client
    forge = ForgeClient(ctx.settings.forge.base_url, FORGE_TOKEN, timeout_seconds=5)
    activities = IntakeActivities(IntakeService(SqlIntakeStore(ctx.engine), ForgeTargetReader(forge),
                                                TemporalAdmitter(client, ctx.settings, search_attributes=False),
                                                scope=scope_rules(ctx.settings)))
    request = IntakeRequest(trigger_kind="schedule", source="scan:retry", event_type="scan.pull_request",
                            delivery_id=delivery_id_for(str(uuid.uuid4()), f"{ctx.owner}/web#7", WEB7_HEAD),
                            tenant="acme", owner=ctx.owner, repo="web", number=7, input_version=WEB7_HEAD,
                            emitted_at=ctx.pull("web", 7)["updated_at"])
    try:
        async with running_worker(client, ctx, search_attributes=False):
            env = ActivityEnvironment()
            first = await env.run(activities.submit, request)
            again = await env.run(activities.submit, request)
            await agent_results(client, [first.workflow_id])
    finally:
        await forge.aclose()
    assert (first.outcome, again.outcome, again.reason) == ("accept", "reject", "duplicate-delivery")
    assert again.receipt_id == first.receipt_id  # answered with the first decision's receipt
    assert [r.outcome for r in ctx.receipts(source="scan:retry")] == ["accept"]  # a repeat writes no row
    assert sims.model_stats()["calls"] == 3


async def test_scan_and_goal_histories_replay_deterministically(temporal_env, ctx, sims):
    from temporalio.worker import Replayer

    from workflows.goal import GoalWorkflow
    from workflows.scan import ScanWorkflow
    from workflows.scan_contracts import GOAL_WORKFLOW, GoalCondition, GoalRequest, GoalResult

    client, req = temporal_env.client, _request(ctx)
    async with running_worker(client, ctx, search_attributes=False):
        scans = []
        for i in (1, 2):  # one that admits, one that records no-work
            scans.append(await client.start_workflow(SCAN_WORKFLOW, req, id=f"scan/{req.scan_id}-{i}",
                                                     task_queue=ctx.task_queue, result_type=ScanResult))
            await scans[-1].result()
        first = await scans[0].result()
        goal = await client.start_workflow(
            GOAL_WORKFLOW, GoalRequest("acme", ctx.owner, "api", 42, GoalCondition("ready"), poll_seconds=30,
                                       max_polls=2, deadline_seconds=600),
            id=f"goal/{uuid.uuid4().hex[:8]}", task_queue=ctx.task_queue, result_type=GoalResult)
        assert (await goal.result()).decision.reason == "duplicate-work"
        await agent_results(client, [d.workflow_id for d in first.decisions])
    replayer = Replayer(workflows=[ScanWorkflow, GoalWorkflow])
    for handle in (*scans, goal):
        await replayer.replay_workflow(await handle.fetch_history())


async def test_a_scan_started_by_hand_never_reads_a_repository_outside_its_tenant(temporal_env, ctx, sims):
    """Configured schedules are checked at load; a scan started some other way is held to the scope
    by its listing activity: the outside repository fails without a forge request, the rest is scanned."""
    client = temporal_env.client
    outside = f"globex/{uuid.uuid4().hex[:8]}"
    sims.forge_ctl("POST", f"/pulls/{outside}/1", json={"head_sha": NEW_HEAD})
    req = _request(ctx, repos=[outside, ctx.repo("web")])
    async with running_worker(client, ctx, search_attributes=False):
        with pytest.raises(WorkflowFailureError) as info:
            await _scan(client, ctx, req)
        await agent_results(client, [r.workflow_id for r in ctx.receipts(source=scan_source(req.scan_id))
                                     if r.outcome == "accept"])
    assert f"{outside}: cannot list pull requests (out-of-scope)" in str(info.value.cause)
    assert [(r.work_key, r.outcome) for r in ctx.receipts(source=scan_source(req.scan_id))] == [
        (ctx.key("web", 7), "accept")]
    assert sims.forge_ctl("GET", "/stats").json()["by_repository"].get(outside, 0) == 0


async def test_a_cancel_that_reaches_a_listing_in_flight_ends_the_scan(temporal_env, ctx, sims):
    """Found by an adversarial review (session 17): a cancel reaching repository A's listing was
    taken for "cannot list", and the scan went on to list and decide repository B, then failed
    ``ScanIncomplete`` (so a schedule pausing on failure paused for a cancel). Now (patch
    ``goal-scan-honour-cancel``) it ends cancelled: nothing else listed or decided, no watermark."""
    from temporalio.client import WorkflowExecutionStatus

    client, req = temporal_env.client, _request(ctx)
    sims.forge_ctl("POST", "/faults", json={"method": "GET", "path": f"{ctx.owner}/api/pulls$",
                                            "hang_seconds": 30, "times": 1})  # the first listing hangs
    async with running_worker(client, ctx, search_attributes=False):
        handle = await client.start_workflow(SCAN_WORKFLOW, req, id=f"scan/{req.scan_id}", task_queue=ctx.task_queue,
                                             result_type=ScanResult)

        async def listing_in_flight() -> bool:
            return bool((await handle.describe()).raw_description.pending_activities)
        await eventually(listing_in_flight)
        await handle.cancel()
        with pytest.raises(WorkflowFailureError):
            await handle.result()
        assert (await handle.describe()).status == WorkflowExecutionStatus.CANCELED
    assert ctx.receipts(source=scan_source(req.scan_id)) == []
    assert WatermarkStore(ctx.engine).get(req.scan_id, ctx.repo("web")) is None
    assert sims.model_stats()["calls"] == 0
