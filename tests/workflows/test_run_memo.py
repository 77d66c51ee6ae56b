"""The Temporal UI's answer to "what is this run and what has it cost": the admitter starts each
run with a summary and a memo, and the workflow upserts the memo's status and cost so far (patch
``memo-cost-so-far``; its recorded history is ``histories/agent_loop_memo_v1.json``)."""

from __future__ import annotations

import base64
import json
import uuid
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType

from demo.github_payloads import delivery_headers, encode, pull_request_payload
from intake.github import parse_github_delivery
from intake.decision import IntakeDecision, Outcome
from intake.envelope import Envelope, PullRequestRef, TriggerKind, WorkCandidate
from intake.ports import Admission
from sluicegate.temporal.admitter import TemporalAdmitter
from sluicegate.config.settings import load_settings
from tests.support.agent_runs import start_order, work_order
from tests.support.sims import fresh_settings
from worker import create_worker
from workflows.contracts import AGENT_WORKFLOW, WORK_ORDER_SIGNAL, AgentLoopResult, AgentLoopStart
from workflows.lean_steps import MEMO_CHANGES_PATCH
from workflows.names import GET_DIFF_ACTIVITY, MODEL_ACTIVITY
from workflows.run_memo import MEMO_PATCH, TITLE_LIMIT, changed_fields, display_title, memo_at_start

HISTORY = Path(__file__).parent / "histories" / "agent_loop_memo_v1.json"


def test_titles_are_one_short_line_of_text():
    assert display_title("Fix\nthe\tparser\x1b[31m  now") == "Fix the parser [31m now"
    assert display_title({"not": "a string"}) == "" and display_title(None) == ""
    long = display_title("x" * 10_000)
    assert len(long) == TITLE_LIMIT and long.endswith("…")


@pytest.mark.parametrize("title, shown", [("Fix the\nparser", "Fix the parser"), (["not", "text"], "")])
def test_a_github_delivery_carries_its_title_to_the_candidate_only(title, shown):
    payload = pull_request_payload("acme", "api", 1, "a" * 40)
    payload["pull_request"]["title"] = title
    body = encode(payload)
    parsed = parse_github_delivery(delivery_headers("s3cret", body), body, source="github", tenant="acme",
                                   secrets=["s3cret"], received_at=datetime.now(UTC))
    assert parsed.candidate.title == shown
    assert parsed.envelope.data == {}  # nothing from the payload on the envelope


async def test_admission_starts_the_run_with_a_summary_and_a_memo(temporal_env, task_queue, request):
    if request.config.getoption("--temporal-env") == "time-skipping":
        pytest.skip("the time-skipping test server keeps no user metadata; make test's dev-server pass runs this")
    settings = load_settings(env={"TEMPORAL_TASK_QUEUE": task_queue})
    admitter = TemporalAdmitter(temporal_env.client, settings, search_attributes=False)
    number = uuid.uuid4().int % 10**6 + 1
    key = f"acme/github:acme/api#{number}:review"
    envelope = Envelope(str(uuid.uuid4()), "github", "pull_request.opened", None, None, datetime.now(UTC),
                        TriggerKind.EVENT, "acme")
    decision = IntakeDecision(Outcome.ACCEPT, "admitted", "", uuid.uuid4().hex, key, "sha1", 1)
    workflow_id, _ = await admitter.admit(Admission(decision, envelope, WorkCandidate(
        key, PullRequestRef("acme", "api", number), "sha1", "acme", title="Fix the\nparser")))
    handle = temporal_env.client.get_workflow_handle(workflow_id)
    desc = await handle.describe()
    try:
        assert await desc.static_summary() == f'acme/api#{number} "Fix the parser" — acme, event'
        assert await desc.memo() == {"pull_request": f"acme/api#{number}", "title": "Fix the parser", "tenant": "acme",
                                     "trigger": "event", "receipt_id": decision.receipt_id, "input_version": "sha1",
                                     "status": "admitted", "cost_so_far_usd": 0.0}
    finally:
        await handle.terminate("memo test: no worker runs it")


async def test_the_workflow_keeps_status_and_cost_so_far_in_the_memo(temporal_env, sims, tmp_path, task_queue):
    settings = fresh_settings(sims, tmp_path)
    order = work_order(settings, search_attributes=not temporal_env.supports_time_skipping)
    async with AsyncExitStack() as stack:
        async with await create_worker(temporal_env.client, settings, stack, task_queue):
            handle = await start_order(temporal_env.client, task_queue, order)
            [outcome] = (await handle.result()).orders
    memo = await (await handle.describe()).memo()
    assert outcome.cost_usd > 0
    assert memo == {"pull_request": "acme/api#42", "tenant": "acme", "trigger": "event",  # no title: none known
                    "receipt_id": order.receipt_id, "input_version": order.input_version,
                    "status": str(outcome.status), "cost_so_far_usd": round(outcome.cost_usd, 6)}


def test_the_recorded_history_has_the_patch_and_its_memo_upserts():
    events = json.loads(HISTORY.read_text())["events"]
    patches = [json.loads(base64.b64decode(p["data"]))["id"] for e in events
               if e["eventType"] == "EVENT_TYPE_MARKER_RECORDED"
               for p in e["markerRecordedEventAttributes"]["details"]["patch-data"]["payloads"]]
    upserts = [e for e in events if e["eventType"] == "EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED"]
    assert MEMO_PATCH in patches
    assert len(upserts) >= 3  # an order's start, its model steps and its end


def _memo_upserts(history) -> list[set[str]]:
    """The field names each memo upsert of a history carried, in order."""
    return [set(e.workflow_properties_modified_event_attributes.upserted_memo.fields) for e in history.events
            if e.event_type == EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED]


@pytest.mark.parametrize("interval", [0.0, 3600.0])
async def test_memo_upserts_carry_only_the_fields_that_changed(temporal_env, sims, tmp_path, task_queue, interval):
    """Patch ``memo-changes-only``: a run started with intake's memo upserts its status alone when the
    order starts, the cost alone after a model step, status and cost at the end; the memo reads the
    same as with full upserts (each field is a payload the worker's SDK converts; issue 11 item 6).
    Patch ``lean-loop-steps-2``: a step's cost upsert waits ``memo_cost_interval_seconds`` after the last
    memo upsert. With 0 every step with tools upserts it; with an hour none does, and the memo still
    ends with the exact cost."""
    settings = fresh_settings(sims, tmp_path)
    order = work_order(settings, search_attributes=not temporal_env.supports_time_skipping,
                       memo_cost_interval_seconds=interval)
    async with AsyncExitStack() as stack:
        async with await create_worker(temporal_env.client, settings, stack, task_queue):
            handle = await temporal_env.client.start_workflow(
                AGENT_WORKFLOW, AgentLoopStart(order.work_key, order.tenant), id=f"agent/{order.work_key}/memo",
                task_queue=task_queue, start_signal=WORK_ORDER_SIGNAL, start_signal_args=[order],
                memo=memo_at_start(order), result_type=AgentLoopResult)  # as the admitter starts it
            [outcome] = (await handle.result()).orders
            history = await handle.fetch_history()
    upserts = _memo_upserts(history)
    steps_upserting = outcome.steps - 1 if interval == 0 else 0  # every step but the last has tools
    assert outcome.steps >= 2 and len(upserts) == steps_upserting + 2  # start, [a step with tools, ...], end
    assert upserts[0] == {"status"}
    assert all(u == {"cost_so_far_usd"} for u in upserts[1:-1])
    assert upserts[-1] == {"status", "cost_so_far_usd"}
    assert await (await handle.describe()).memo() == {
        "pull_request": "acme/api#42", "tenant": "acme", "trigger": "event", "receipt_id": order.receipt_id,
        "input_version": order.input_version, "status": str(outcome.status),
        "cost_so_far_usd": round(outcome.cost_usd, 6)}


async def test_a_run_started_without_a_memo_gets_every_known_field_once(temporal_env, sims, tmp_path, task_queue):
    settings = fresh_settings(sims, tmp_path)
    order = work_order(settings, search_attributes=not temporal_env.supports_time_skipping)
    async with AsyncExitStack() as stack:
        async with await create_worker(temporal_env.client, settings, stack, task_queue):
            handle = await start_order(temporal_env.client, task_queue, order)
            await handle.result()
            history = await handle.fetch_history()
    upserts = _memo_upserts(history)
    assert upserts[0] == set(memo_at_start(order))  # every known field (no title: none known), status running
    assert all(len(u) <= 2 for u in upserts[1:])


def test_changed_fields_counts_an_absent_key_as_none():
    assert changed_fields({"status": "running", "cost": 0.5}, {"status": "running", "cost": 0.75, "title": None}) == {
        "cost": 0.75}
    assert changed_fields({}, {"status": "done", "title": None}) == {"status": "done"}
    assert changed_fields({"title": "x"}, {"title": None}) == {"title": None}  # a removal is a change


def test_the_recorded_memo_changes_history_has_one_marker_and_small_upserts():
    """``histories/agent_loop_lean_memo_changes_v1.json`` (``record_histories`` scenario ``lean`` after the patch)."""
    events = json.loads((HISTORY.parent / "agent_loop_lean_memo_changes_v1.json").read_text())["events"]
    patches = [json.loads(base64.b64decode(p["data"]))["id"] for e in events
               if e["eventType"] == "EVENT_TYPE_MARKER_RECORDED"
               and e["markerRecordedEventAttributes"]["markerName"] == "core_patch"
               for p in e["markerRecordedEventAttributes"]["details"]["patch-data"]["payloads"]]
    upserts = [set(e["workflowPropertiesModifiedEventAttributes"]["upsertedMemo"]["fields"]) for e in events
               if e["eventType"] == "EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED"]
    assert patches == [MEMO_CHANGES_PATCH]
    assert len(upserts) >= 3 and all(u <= {"status", "cost_so_far_usd"} for u in upserts[1:])


def _last_completed_before_each_upsert(history) -> list[str]:
    """For each memo upsert after the first, the type of the activity whose completion came last before it."""
    scheduled: dict[int, str] = {}
    last, found = "", []
    for e in history.events:
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            scheduled[e.event_id] = e.activity_task_scheduled_event_attributes.activity_type.name
        elif e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            last = scheduled[e.activity_task_completed_event_attributes.scheduled_event_id]
        elif e.event_type == EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED:
            found.append(last)
    return found[1:]


async def test_a_cost_held_back_by_the_interval_is_upserted_after_the_tool_call_that_finds_it_due(
        temporal_env, sims, tmp_path, task_queue):
    """Patch ``lean-loop-steps-2``: the first step's cost is held back (the order's start upserted a moment
    before); the diff read that follows takes longer than the interval (the forge simulator holds it 1.5 s),
    so the cost is upserted right after that tool call, not only at the order's end."""
    settings = fresh_settings(sims, tmp_path)
    order = work_order(settings, search_attributes=not temporal_env.supports_time_skipping,
                       memo_cost_interval_seconds=1.0)
    sims.forge_ctl("POST", "/faults", json={"method": "GET", "path": r"/pulls/42$", "accept": "diff",
                                            "hang_seconds": 1.5, "times": 1})
    async with AsyncExitStack() as stack:
        async with await create_worker(temporal_env.client, settings, stack, task_queue):
            handle = await temporal_env.client.start_workflow(
                AGENT_WORKFLOW, AgentLoopStart(order.work_key, order.tenant), id=f"agent/{order.work_key}/held",
                task_queue=task_queue, start_signal=WORK_ORDER_SIGNAL, start_signal_args=[order],
                memo=memo_at_start(order), result_type=AgentLoopResult)
            [outcome] = (await handle.result()).orders
            history = await handle.fetch_history()
    upserts = _memo_upserts(history)
    tools = set(_last_completed_before_each_upsert(history)[:-1]) - {MODEL_ACTIVITY}  # the end's upsert left out
    assert outcome.status == "done" and {"cost_so_far_usd"} in upserts[1:-1]
    assert tools == {GET_DIFF_ACTIVITY}, _last_completed_before_each_upsert(history)
