"""Heartbeats that mean progress: a model answer that stalls mid-response stops the heartbeats, so
Temporal's heartbeat timeout ends the attempt and the retry answers — long before the stall would
have ended or the start-to-close timeout fired. On SQLite and PostgreSQL (the step's reservation and
journal live in the ledger).

Real parts: the Temporal dev server (its histories record each retried attempt's last failure, with
the last heartbeat details), the real worker wiring, the forge and model simulators over HTTP; the
model simulator's ``stall_after_bytes`` fault sends the first bytes of a 200 answer and then holds
the rest back.
"""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack

from temporalio.api.enums.v1 import TimeoutType

from tests.support.agent_runs import copy_of_pr42, start_order, work_order
from tests.support.sims import settings_for
from worker import create_worker
from workflows.steps import MODEL_ACTIVITY

STALL_SECONDS = 45
"""Longer than the heartbeat timeout (2 s) many times over, shorter than start-to-close (60 s): with
a background beat the stalled attempt would look alive and answer, as attempt 1, after the stall."""


async def test_a_model_answer_stalled_mid_response_is_timed_out_by_its_heartbeat_and_retried(
        sims, ledger_url, dev_env, task_queue, caplog):
    caplog.set_level(logging.INFO, logger="temporalio.activity")
    sims.reset()
    owner, head = copy_of_pr42(sims)
    sims.model_ctl("POST", "/faults", json={"stall_after_bytes": 40, "delay_seconds": STALL_SECONDS, "times": 1})
    settings = settings_for(sims, ledger_url, SLUICEGATE__ACTIVITIES__MODEL_HEARTBEAT_SECONDS="2",
                            SLUICEGATE__ACTIVITIES__MODEL_START_TO_CLOSE_SECONDS="60")
    order = work_order(settings, owner=owner, version=head)
    async with AsyncExitStack() as stack:
        worker = await create_worker(dev_env.client, settings, stack, task_queue, search_attributes=False)
        async with worker:
            handle = await start_order(dev_env.client, task_queue, order)
            [outcome] = (await handle.result()).orders
            history = await handle.fetch_history()
            # The stalled attempt 1 still waits on the rest of its answer inside this worker: send it,
            # so the worker stops now rather than after its graceful window.
            sims.release_model_calls()

    assert (outcome.status, outcome.steps, outcome.retries) == ("done", 3, 1)
    scheduled = {e.event_id for e in history.events if e.HasField("activity_task_scheduled_event_attributes")
                 and e.activity_task_scheduled_event_attributes.activity_type.name == MODEL_ACTIVITY}
    first_step = min(scheduled)
    [started] = [e.activity_task_started_event_attributes for e in history.events
                 if e.HasField("activity_task_started_event_attributes")
                 and e.activity_task_started_event_attributes.scheduled_event_id == first_step]
    assert started.attempt == 2
    timeout = started.last_failure.timeout_failure_info
    assert timeout.timeout_type == TimeoutType.TIMEOUT_TYPE_HEARTBEAT
    # Its last beat came from the work itself — the first 40 bytes of the answer had arrived — and
    # Temporal handed it to the retry (``activity.info().heartbeat_details``), which logs it.
    [progress] = [r.args[2] for r in caplog.records if "the last attempt's progress" in r.getMessage()]
    assert progress == {"attempt": 1, "step": 1, "phase": "receiving", "bytes": 40, "chunks": 1}
