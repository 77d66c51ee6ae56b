"""The run reconciler: versions whose run closed without an outcome get the real one (terminated,
failed), across continue-as-new, with a dead letter; open runs and pending admissions are left alone."""

from __future__ import annotations

import asyncio
import time
import uuid
from contextlib import AsyncExitStack

import pytest
from sqlmodel import Session, select
from temporalio.client import WorkflowFailureError

from activities.run_reconciler import RunReconciler
from intake.identity import workflow_id_for
from ledger import DeadLetters, WorkStore, WorkVersion, make_engine
from tests.support.agent_runs import accept_in_ledger, mark_admitted, work_order
from tests.support.sims import settings_for
from worker import create_worker
from workflows.contracts import (
    AGENT_WORKFLOW, STATE_SCHEMA_VERSION, WORK_ORDER_SIGNAL, AgentLoopStart, AgentLoopState,
)
from workflows.stranded import ReconcileRequest


@pytest.fixture
def settings(sims, ledger_url):
    sims.reset()
    return settings_for(sims, ledger_url)


def _fresh(settings, number: int | None = None):
    number = number or int(uuid.uuid4().int % 10**8)
    return accept_in_ledger(settings, work_order(settings, number=number, version=uuid.uuid4().hex + "0" * 8))


async def _start(client, task_queue, first, *, carried=(), max_orders: int = 50):
    """Start the agent workflow the way signal-with-start does, optionally with carried state."""
    state = AgentLoopState(STATE_SCHEMA_VERSION, pending=list(carried)) if carried else None
    return await client.start_workflow(
        AGENT_WORKFLOW, AgentLoopStart(first.work_key, first.tenant, state, max_orders), id=workflow_id_for(
            first.work_key), task_queue=task_queue, start_signal=WORK_ORDER_SIGNAL, start_signal_args=[first])


async def _reconcile(client, settings):
    engine = make_engine(settings.ledger_url())
    result = await RunReconciler(client, WorkStore(engine, settings.dead_letters.owner_for)).reconcile(
        ReconcileRequest(grace_seconds=0))
    letters = {(d.work_key, d.input_version): d for d in DeadLetters(engine).list(status=None, limit=1000)}
    with Session(engine) as s:
        versions = {(v.work_key, v.input_version): v for v in s.exec(select(WorkVersion))}
    engine.dispose()
    return result, versions, letters


async def _model_call_for(sims, work_key: str) -> None:
    deadline = time.monotonic() + 20
    while not any(k.startswith(work_key + "@") for k in sims.model_stats()["by_work"]):
        assert time.monotonic() < deadline, "the model call never started"
        await asyncio.sleep(0.05)


async def test_terminated_run_is_recorded_terminated_with_a_dead_letter(temporal_env, settings, sims, task_queue):
    sims.model_ctl("POST", "/faults", json={"delay_seconds": 30, "times": None})
    order, decision = _fresh(settings)
    client = temporal_env.client
    async with AsyncExitStack() as stack:
        async with await create_worker(client, settings, stack, task_queue):
            handle = await _start(client, task_queue, order)
            mark_admitted(settings, decision, handle.id, handle.result_run_id)
            await _model_call_for(sims, order.work_key)
            result, versions, _ = await _reconcile(client, settings)
            assert versions[(order.work_key, order.input_version)].status == "admitted"  # running: left alone
            await handle.terminate(reason="operator: stuck on a huge diff")
            result, versions, letters = await _reconcile(client, settings)
    version = versions[(order.work_key, order.input_version)]
    assert f"{order.work_key}@{order.input_version}: terminated" in result.settled
    assert version.status == "terminated"
    assert version.result["reason"].startswith("terminated: operator: stuck on a huge diff (by ")
    letter = letters[(order.work_key, order.input_version)]
    assert (letter.status, letter.owner) == ("open", "acme-reviews-team") and letter.reason == version.result["reason"]
    again, versions, _ = await _reconcile(client, settings)  # idempotent: nothing left to settle for it
    assert not [s for s in again.settled if s.startswith(order.work_key + "@")]


async def test_failure_after_continue_as_new_is_followed_to_the_run_that_failed(temporal_env, settings, sims,
                                                                                 task_queue):
    """Versions signalled into run 1 are carried to run 2 by continue-as-new; run 2 is terminated."""
    sims.model_ctl("POST", "/faults", json={"delay_seconds": 30, "times": None})
    older, older_decision = _fresh(settings)
    newer, newer_decision = _fresh(settings, older.number)
    client = temporal_env.client
    async with AsyncExitStack() as stack:
        async with await create_worker(client, settings, stack, task_queue):
            # One order per run: the older one is superseded at once, then the run continues as new.
            handle = await _start(client, task_queue, newer, carried=[older], max_orders=1)
            for decision in (older_decision, newer_decision):
                mark_admitted(settings, decision, handle.id, handle.result_run_id)
            await _model_call_for(sims, newer.work_key)
            latest = client.get_workflow_handle(handle.id)
            assert (await latest.describe()).run_id != handle.result_run_id  # the chain moved on
            await latest.terminate(reason="drill")
            result, versions, letters = await _reconcile(client, settings)
    assert versions[(older.work_key, older.input_version)].status == "superseded"  # recorded by run 1 itself
    carried = versions[(newer.work_key, newer.input_version)]
    assert carried.status == "terminated" and carried.run_id != handle.result_run_id
    assert (newer.work_key, newer.input_version) in letters


async def test_a_run_that_fails_on_its_state_is_recorded_failed(temporal_env, settings, sims, task_queue):
    order, decision = _fresh(settings)
    client = temporal_env.client
    async with AsyncExitStack() as stack:
        async with await create_worker(client, settings, stack, task_queue):
            handle = await client.start_workflow(
                AGENT_WORKFLOW, AgentLoopStart(order.work_key, order.tenant, AgentLoopState(STATE_SCHEMA_VERSION + 1)),
                id=workflow_id_for(order.work_key), task_queue=task_queue, start_signal=WORK_ORDER_SIGNAL,
                start_signal_args=[order])
            mark_admitted(settings, decision, handle.id, handle.result_run_id)
            with pytest.raises(WorkflowFailureError):
                await handle.result()
            result, versions, letters = await _reconcile(client, settings)
    version = versions[(order.work_key, order.input_version)]
    assert version.status == "failed" and "StateSchemaUnsupported" in version.result["reason"]
    assert "StateSchemaUnsupported" in letters[(order.work_key, order.input_version)].reason


async def test_versions_pending_admission_are_never_touched(temporal_env, settings, sims, task_queue):
    order, _ = _fresh(settings)  # accepted, never admitted: the outbox relay's
    result, versions, letters = await _reconcile(temporal_env.client, settings)
    assert versions[(order.work_key, order.input_version)].status == "accepted"
    assert (order.work_key, order.input_version) not in letters
