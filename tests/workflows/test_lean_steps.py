"""Patch ``lean-loop-steps`` (``workflows/lean_steps.py``): one patch marker per run, the ledger
bookkeeping as local activities, and histories recorded before it still replaying on the old path.

Real parts: the time-skipping (or dev) Temporal server, the real worker and activities, the forge and
model simulators over HTTP, a SQLite ledger. The recorded histories are
``histories/agent_loop_lean_steps_v1.json`` and ``agent_loop_lean_cancel_v1.json``
(``tests/workflows/record_histories.py``, scenarios ``lean`` and ``claim-cancel``), and the same two under
patch ``memo-changes-only`` (``agent_loop_lean_memo_changes_v1`` / ``_cancel_v1``) and under patch
``lean-loop-steps-2`` (``agent_loop_lean2_v1`` / ``agent_loop_lean2_cancel_v1``); test_replay.py replays every
history.
"""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from contextlib import AsyncExitStack
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError, WorkflowHistory
from temporalio.worker import Replayer, UnsandboxedWorkflowRunner, Worker

import ledger
from tests.support.agent_runs import accept_in_ledger, start_order, work_order
from tests.support.sims import settings_for
from worker import create_worker
from workflows.agent_loop import AgentLoopWorkflow
from workflows.contracts import AGENT_WORKFLOW, AgentLoopResult, AgentLoopStart
from workflows.lean_steps import (
    LEAN2_PATCH, LEAN_PATCH, MEMO_CHANGES_PATCH, SUBSUMED, finish_then_cancel, lean, lean2, memo_changes_only,
)
from workflows.names import (
    CLAIM_ORDER_ACTIVITY, MODEL_ACTIVITY, RECHECK_POLICY_ACTIVITY, RECORD_OUTCOME_ACTIVITY, RELEASE_CAPACITY_ACTIVITY,
)

HISTORIES = Path(__file__).parent / "histories"
LEDGER_ACTIVITIES = {CLAIM_ORDER_ACTIVITY, RECHECK_POLICY_ACTIVITY, RECORD_OUTCOME_ACTIVITY, RELEASE_CAPACITY_ACTIVITY}


def _shape(events: list[dict]) -> tuple[list[str], list[str], list[str]]:
    """(patch ids of the markers, local activities' types, regular activities' types) in a JSON history."""
    patches, local, scheduled = [], [], []
    for e in events:
        if e["eventType"] == "EVENT_TYPE_MARKER_RECORDED":
            attrs = e["markerRecordedEventAttributes"]
            details = attrs["details"]
            if attrs["markerName"] == "core_patch":
                patches.append(json.loads(base64.b64decode(details["patch-data"]["payloads"][0]["data"]))["id"])
            elif attrs["markerName"] == "core_local_activity":
                local.append(json.loads(base64.b64decode(details["data"]["payloads"][0]["data"]))["activity_type"])
        elif e["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED":
            scheduled.append(e["activityTaskScheduledEventAttributes"]["activityType"]["name"])
    return patches, local, scheduled


LEAN_HISTORIES = {"agent_loop_lean_steps_v1": LEAN_PATCH, "agent_loop_lean_cancel_v1": LEAN_PATCH,
                  "agent_loop_lean_memo_changes_v1": MEMO_CHANGES_PATCH,
                  "agent_loop_lean_memo_changes_cancel_v1": MEMO_CHANGES_PATCH,
                  "agent_loop_lean2_v1": LEAN2_PATCH, "agent_loop_lean2_cancel_v1": LEAN2_PATCH,
                  "agent_loop_lean2_policy_permit_v1": LEAN2_PATCH}


def test_the_recorded_lean_histories_have_one_patch_marker_and_the_ledger_work_as_local_activities():
    for name, marker in LEAN_HISTORIES.items():
        patches, local, scheduled = _shape(json.loads((HISTORIES / f"{name}.json").read_text())["events"])
        assert patches == [marker], name
        assert CLAIM_ORDER_ACTIVITY in local and RECORD_OUTCOME_ACTIVITY in local, name
        assert RELEASE_CAPACITY_ACTIVITY in local, name
        assert not LEDGER_ACTIVITIES & set(scheduled), name
        assert MODEL_ACTIVITY in scheduled, name  # the model and the tools stay regular activities


def test_histories_recorded_before_the_patch_keep_their_own_markers_and_regular_ledger_activities():
    older = [p for p in sorted(HISTORIES.glob("agent_loop_*.json")) if "lean" not in p.stem]
    assert older
    for path in older:
        patches, local, scheduled = _shape(json.loads(path.read_text())["events"])
        assert LEAN_PATCH not in patches and not local, path.stem
        assert set(patches) <= SUBSUMED, path.stem  # each older patch is one the lean marker stands for
        assert CLAIM_ORDER_ACTIVITY in scheduled or "claim-order-at-start" not in patches, path.stem


@pytest.mark.parametrize("admitted_under", ["current", "older"])
async def test_a_run_replays_and_its_ledger_work_leaves_no_activity_tasks(temporal_env, sims, tmp_path, task_queue,
                                                                         admitted_under):
    """A fresh run takes the lean path end to end (admission proven, outcome recorded, capacity
    released) and its own history replays on this code. Under ``lean-loop-steps-2`` the policy re-check
    runs only for an order admitted under another policy version than the worker's (the claim says so)."""
    sims.reset()
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    settings = settings_for(sims, url, SLUICEGATE__TEMPORAL__REQUIRE_ADMISSION="true")
    policy_version = settings.intake.policy_version if admitted_under == "current" else "2000-01-01.1"
    order, _ = accept_in_ledger(settings, replace(
        work_order(settings, search_attributes=not temporal_env.supports_time_skipping), policy_version=policy_version))
    async with AsyncExitStack() as stack:
        async with await create_worker(temporal_env.client, settings, stack, task_queue,
                                       search_attributes=not temporal_env.supports_time_skipping):
            handle = await start_order(temporal_env.client, task_queue, order)
            [outcome] = (await handle.result()).orders
            history = await handle.fetch_history()
    assert outcome.status == "done" and outcome.steps > 0
    patches, local, scheduled = _shape(json.loads(history.to_json())["events"])
    assert patches == [LEAN2_PATCH]  # the newest patch's one marker stands for lean-loop-steps
    expected = LEDGER_ACTIVITIES if admitted_under == "older" else LEDGER_ACTIVITIES - {RECHECK_POLICY_ACTIVITY}
    assert sorted(set(local)) == sorted(expected)
    assert scheduled.count(MODEL_ACTIVITY) == outcome.steps
    engine = ledger.make_engine(url)
    try:
        from sqlmodel import Session
        with Session(engine) as s:
            version = s.get(ledger.WorkVersion, (order.work_key, order.input_version))
            assert version is not None and version.status == "done"  # the outcome local activity wrote it
    finally:
        engine.dispose()
    replayed = await Replayer(workflows=[AgentLoopWorkflow]).replay_workflow(
        WorkflowHistory.from_json(handle.id, history.to_json()), raise_on_replay_failure=True)
    assert replayed.replay_failure is None


@workflow.defn(name="LeanFinishThenCancelProbe")
class FinishThenCancelProbe:
    """A timer stands in for the outcome write: under the patch a cancel must let it finish first."""

    @workflow.run
    async def run(self) -> str:
        await finish_then_cancel(workflow.sleep(timedelta(seconds=3)))
        return "not cancelled"


async def test_a_cancel_during_a_ledger_write_waits_for_the_write_then_cancels_the_run(temporal_env, task_queue):
    client = temporal_env.client
    async with Worker(client, task_queue=task_queue, workflows=[FinishThenCancelProbe],
                      workflow_runner=UnsandboxedWorkflowRunner()):
        handle = await client.start_workflow(FinishThenCancelProbe.run, id=f"lean-probe-{uuid.uuid4().hex[:8]}",
                                             task_queue=task_queue)
        for _ in range(200):  # the timer (the "write") is in flight
            if EventType.EVENT_TYPE_TIMER_STARTED in [e.event_type async for e in handle.fetch_history_events()]:
                break
            await asyncio.sleep(0.05)
        await handle.cancel()
        with pytest.raises(WorkflowFailureError):
            await handle.result()
        kinds = [e.event_type async for e in handle.fetch_history_events()]
        status = (await handle.describe()).status
    assert status == WorkflowExecutionStatus.CANCELED
    assert EventType.EVENT_TYPE_TIMER_FIRED in kinds and EventType.EVENT_TYPE_TIMER_CANCELED not in kinds
    assert kinds.index(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED) < kinds.index(
        EventType.EVENT_TYPE_TIMER_FIRED)  # the cancel came first; the write still ran to its end


_BRANCHES: list[tuple[bool, bool, bool]] = []
"""(lean-loop-steps, memo-changes-only, lean-loop-steps-2) as each memo upsert of a replay saw them
(unsandboxed, so shared)."""


@workflow.defn(name=AGENT_WORKFLOW)
class _BranchRecording(AgentLoopWorkflow):
    @workflow.run
    async def run(self, start: AgentLoopStart) -> AgentLoopResult:
        return await super().run(start)

    def _upsert_memo(self, order, cost: float, status: str) -> None:
        if self._memo:
            _BRANCHES.append((lean(), memo_changes_only(), lean2()))
        super()._upsert_memo(order, cost, status)


@pytest.mark.parametrize(("name", "patch"), list(LEAN_HISTORIES.items()))
async def test_a_replay_takes_the_branch_its_history_recorded(name, patch):
    """A run that recorded ``lean-loop-steps`` alone (started before ``memo-changes-only``) replays, and goes
    on after a crash or on a new worker, with full memo upserts; one that recorded ``memo-changes-only`` with
    changed fields only. Replay alone cannot tell: sdk-core does not compare an upsert's fields with the
    history's (a recorded upsert stripped to one field still replays), so the branch is checked here."""
    _BRANCHES.clear()
    history = WorkflowHistory.from_json(name, (HISTORIES / f"{name}.json").read_text())
    result = await Replayer(workflows=[_BranchRecording], workflow_runner=UnsandboxedWorkflowRunner()).replay_workflow(
        history, raise_on_replay_failure=True)
    assert result.replay_failure is None
    assert _BRANCHES and set(_BRANCHES) == {(True, patch in (MEMO_CHANGES_PATCH, LEAN2_PATCH), patch == LEAN2_PATCH)}


def test_under_lean_loop_steps_2_an_unchanged_policy_is_not_re_checked():
    """The recorded ``lean-loop-steps-2`` histories of orders admitted under the worker's own policy have no
    policy re-check (the same scenarios under ``memo-changes-only`` ran one per order that ran); the one of
    an order admitted under another version (``policy-permit``) ran it."""
    for name, patch in LEAN_HISTORIES.items():
        _, local, _ = _shape(json.loads((HISTORIES / f"{name}.json").read_text())["events"])
        assert (RECHECK_POLICY_ACTIVITY in local) == (patch != LEAN2_PATCH or "policy" in name), name
