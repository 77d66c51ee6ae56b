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

import ledger
from demo.github_payloads import delivery_headers, encode, pull_request_payload
from intake.github import parse_github_delivery
from intake.decision import IntakeDecision, Outcome
from intake.envelope import Envelope, PullRequestRef, TriggerKind, WorkCandidate
from intake.ports import Admission
from sluicegate.temporal.admitter import TemporalAdmitter
from sluicegate.config.settings import load_settings
from tests.support.agent_runs import start_order, work_order
from tests.support.sims import settings_for
from worker import create_worker
from workflows.run_memo import MEMO_PATCH, TITLE_LIMIT, display_title

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
    sims.reset()
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    settings = settings_for(sims, url)
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
