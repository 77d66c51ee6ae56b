"""Heartbeats that mean progress, for the forge tools: a diff read that stalls mid-body stops the
heartbeats, so Temporal's heartbeat timeout ends the attempt and the retry reads the whole diff —
long before the stall would have ended or the start-to-close timeout fired. A comment post whose
answer stalls after GitHub stored it is ended the same way, and the retry reconciles (side-effect
ledger): one comment. On SQLite and PostgreSQL (kill checks and the side-effect ledger).

Real parts: the Temporal dev server (its history records the retried attempt's last failure), the
real worker wiring, the forge and model simulators over HTTP; the forge simulator's
``stall_after_bytes`` fault sends the first bytes of the 200 diff and then holds the rest back.
"""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack

import httpx
from temporalio.api.enums.v1 import TimeoutType

from tests.support.agent_runs import copy_of_pr42, start_order, work_order
from tests.support.sims import FORGE_TOKEN, settings_for
from worker import create_worker
from workflows.contracts import ToolResult
from workflows.names import GET_DIFF_ACTIVITY, POST_COMMENT_ACTIVITY

STALL_SECONDS = 45
"""Longer than the heartbeat timeout (2 s) many times over, shorter than start-to-close and the forge
client's timeout (60 s): with a background beat the stalled attempt looks alive and answers, as
attempt 1, once the stall ends."""
STALL_AFTER_BYTES = 100
DIFF_MEDIA_TYPE = "application/vnd.github.diff"


async def test_a_diff_read_stalled_mid_body_is_timed_out_by_its_heartbeat_and_retried(
        sims, ledger_url, dev_env, task_queue, caplog):
    caplog.set_level(logging.INFO, logger="temporalio.activity")
    sims.reset()
    owner, head = copy_of_pr42(sims)
    diff = httpx.get(f"{sims.forge.base_url}/repos/{owner}/api/pulls/42",
                     headers={"Authorization": f"Bearer {FORGE_TOKEN}", "Accept": DIFF_MEDIA_TYPE}).raise_for_status().text
    assert len(diff.encode()) > STALL_AFTER_BYTES
    sims.forge_ctl("POST", "/faults", json={"method": "GET", "path": f"^/repos/{owner}/api/pulls/42$",
                                            "accept": DIFF_MEDIA_TYPE, "stall_after_bytes": STALL_AFTER_BYTES,
                                            "hang_seconds": STALL_SECONDS, "times": 1})
    outcome, history = await _run(sims, ledger_url, dev_env, task_queue, owner, head)

    assert outcome.status == "done"
    assert sims.forge_ctl("GET", "/faults").json() == []  # the stall was served
    result = await _retried_on_heartbeat_timeout(dev_env, history, GET_DIFF_ACTIVITY)
    assert (result.attempt, result.content) == (2, diff)
    # The lost attempt's last beat came from the work itself — the first bytes of the diff had
    # arrived — and Temporal handed it to the retry, which logs it.
    [progress] = [r.args[2] for r in caplog.records if "the last attempt's progress" in r.getMessage()]
    assert progress == {"attempt": 1, "tool": "get_pull_request_diff", "tries": 1, "phase": "receiving",
                        "bytes": STALL_AFTER_BYTES, "chunks": 1}


async def test_a_post_whose_answer_stalls_is_timed_out_and_the_retry_reconciles_one_comment(
        sims, ledger_url, dev_env, task_queue, caplog):
    caplog.set_level(logging.INFO, logger="temporalio.activity")
    sims.reset()
    owner, head = copy_of_pr42(sims)
    sims.forge_ctl("POST", "/faults", json={"method": "POST", "path": f"^/repos/{owner}/api/issues/42/comments$",
                                            "stall_after_bytes": STALL_AFTER_BYTES, "hang_seconds": STALL_SECONDS,
                                            "times": 1})
    outcome, history = await _run(sims, ledger_url, dev_env, task_queue, owner, head)

    assert outcome.status == "done"
    assert sims.forge_ctl("GET", "/faults").json() == []  # the stall was served: the comment was stored first
    result = await _retried_on_heartbeat_timeout(dev_env, history, POST_COMMENT_ACTIVITY)
    assert (result.attempt, result.reconciled) == (2, True)
    assert len([c for c in sims.comments() if c["owner"] == owner]) == 1
    [progress] = [r.args[2] for r in caplog.records if "the last attempt's progress" in r.getMessage()]
    assert progress == {"attempt": 1, "tool": "post_review_comment", "tries": 1, "phase": "receiving",
                        "bytes": STALL_AFTER_BYTES, "chunks": 1}


async def _run(sims, ledger_url, dev_env, task_queue, owner, head):
    settings = settings_for(sims, ledger_url, SLUICEGATE__ACTIVITIES__TOOL_HEARTBEAT_SECONDS="2",
                            SLUICEGATE__ACTIVITIES__TOOL_START_TO_CLOSE_SECONDS="60",
                            SLUICEGATE__FORGE__TIMEOUT_SECONDS="60")
    order = work_order(settings, owner=owner, version=head)
    async with AsyncExitStack() as stack:
        worker = await create_worker(dev_env.client, settings, stack, task_queue, search_attributes=False)
        async with worker:
            handle = await start_order(dev_env.client, task_queue, order)
            [outcome] = (await handle.result()).orders
            history = await handle.fetch_history()
            # The stalled attempt 1 still waits on the rest of its answer inside this worker: send it,
            # so the worker stops now rather than after its graceful window.
            sims.release_forge_hangs()
            return outcome, history


async def _retried_on_heartbeat_timeout(dev_env, history, activity_type: str) -> ToolResult:
    """The first ``activity_type`` call of the run: it started twice, the second time after attempt 1
    ended on a heartbeat timeout; its result."""
    first = min(e.event_id for e in history.events if e.HasField("activity_task_scheduled_event_attributes")
                and e.activity_task_scheduled_event_attributes.activity_type.name == activity_type)
    [started] = [e.activity_task_started_event_attributes for e in history.events
                 if e.HasField("activity_task_started_event_attributes")
                 and e.activity_task_started_event_attributes.scheduled_event_id == first]
    assert started.attempt == 2
    assert started.last_failure.timeout_failure_info.timeout_type == TimeoutType.TIMEOUT_TYPE_HEARTBEAT
    [completed] = [e.activity_task_completed_event_attributes for e in history.events
                   if e.HasField("activity_task_completed_event_attributes")
                   and e.activity_task_completed_event_attributes.scheduled_event_id == first]
    [result] = await dev_env.client.data_converter.decode(completed.result.payloads, [ToolResult])
    return result
