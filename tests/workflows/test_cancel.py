"""Cancellation is an outcome: a cancel from Temporal (or ``starter.py cancel``'s reason) stops the
model call in flight, ends the open orders ``cancelled`` with who and why, writes no dead letter,
ends the day-budget hold — charged at its estimate: a cancelled call may have been billed — and
closes the workflow CANCELED — on both ledgers and both servers."""

from __future__ import annotations

import asyncio
import time
import uuid
from contextlib import AsyncExitStack

import pytest
from sqlmodel import Session, select
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError
from temporalio.exceptions import CancelledError

from ledger import CancelRequests, DeadLetters, WorkVersion, make_engine
from ledger._budgets import BudgetReservation
from tests.support.agent_runs import admit_in_ledger, start_order, work_order
from tests.support.sims import settings_for
from worker import create_worker
from workflows.cancellation import cancel_reason_text


@pytest.fixture
def settings(sims, ledger_url):
    sims.reset()
    return settings_for(sims, ledger_url)


def _order(settings, **kw):
    """A fresh work key (the ledger is shared by the tests of a session) admitted in the ledger."""
    number = int(uuid.uuid4().int % 10**8)
    return admit_in_ledger(settings, work_order(settings, number=number, version=uuid.uuid4().hex + "0" * 8, **kw))


async def _wait_model_call(sims, work_key: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not any(k.startswith(work_key + "@") for k in sims.model_stats()["by_work"]):
        assert time.monotonic() < deadline, "the model call never started"
        await asyncio.sleep(0.05)


def _versions(settings, work_key: str) -> dict[str, WorkVersion]:
    engine = make_engine(settings.ledger_url())
    with Session(engine) as s:
        rows = {v.input_version: v for v in s.exec(select(WorkVersion).where(WorkVersion.work_key == work_key))}
    engine.dispose()
    return rows


async def _cancel_during_model_call(temporal_env, settings, sims, task_queue, order, reason: str = "",
                                    then=None):
    """Start ``order`` with a slow model, cancel the workflow once the call is in flight."""
    sims.model_ctl("POST", "/faults", json={"delay_seconds": 30, "times": None})
    async with AsyncExitStack() as stack:
        async with await create_worker(temporal_env.client, settings, stack, task_queue):
            handle = await start_order(temporal_env.client, task_queue, order)
            await _wait_model_call(sims, order.work_key)
            if then is not None:
                await then(handle)
            await handle.cancel(reason=reason)
            with pytest.raises(WorkflowFailureError) as failure:
                await handle.result()
            status = (await handle.describe()).status
            events = [e async for e in handle.fetch_history_events()]
    cancelled = [e for e in events if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED]
    return failure.value.cause, status, cancelled


async def test_cancel_from_temporal_stops_the_model_call_and_ends_cancelled(temporal_env, settings, sims,
                                                                            task_queue):
    order = _order(settings)
    cause, status, cancelled = await _cancel_during_model_call(temporal_env, settings, sims, task_queue, order)
    assert isinstance(cause, CancelledError) and status == WorkflowExecutionStatus.CANCELED
    assert len(cancelled) == 1  # the model call in flight saw the cancel and stopped (not waited out)
    version = _versions(settings, order.work_key)[order.input_version]
    assert version.status == "cancelled"
    assert version.result["reason"].startswith("cancelled by temporal: ")
    assert version.result["cancelled_by"] == "temporal"
    engine = make_engine(settings.ledger_url())
    assert [letter for letter in DeadLetters(engine).list(status=None) if letter.work_key == order.work_key] == []
    with Session(engine) as s:
        held = [r for r in s.exec(select(BudgetReservation).where(BudgetReservation.work_key == order.work_key))]
    engine.dispose()
    # the cancelled call's hold ended, charged at its estimate (the provider may have billed it), never at $0
    assert [(r.status, r.spent_usd) for r in held] == [("estimated", held[0].amount_usd)] and held[0].amount_usd > 0
    assert sims.model_stats()["calls"] == 1 and sims.comments() == []


async def test_cancel_through_a_recorded_request_names_the_actor(temporal_env, settings, sims, task_queue):
    order = _order(settings)
    engine = make_engine(settings.ledger_url())
    request = CancelRequests(engine).record(order.work_key, "agent/x", "alice", "wrong pull request")
    engine.dispose()
    reason = cancel_reason_text(request.id, "alice", "wrong pull request")
    await _cancel_during_model_call(temporal_env, settings, sims, task_queue, order, reason)
    version = _versions(settings, order.work_key)[order.input_version]
    assert (version.status, version.result["reason"]) == ("cancelled", "cancelled by alice: wrong pull request")
    assert version.result["cancelled_by"] == "alice"


async def test_a_claimed_actor_without_a_recorded_request_is_not_believed(temporal_env, settings, sims, task_queue):
    order = _order(settings)
    forged = cancel_reason_text(uuid.uuid4().hex, "carol", "looks official")
    await _cancel_during_model_call(temporal_env, settings, sims, task_queue, order, forged)
    version = _versions(settings, order.work_key)[order.input_version]
    assert version.status == "cancelled" and version.result["cancelled_by"] == "temporal"
    assert version.result["reason"].startswith("cancelled by temporal: unconfirmed cancel request")


async def test_pending_orders_end_cancelled_with_the_current_one(temporal_env, settings, sims, task_queue):
    first = _order(settings)
    newer = work_order(settings, number=first.number, version=uuid.uuid4().hex + "1" * 8)

    async def signal_newer(handle):
        """Admitted while the first runs (admitted before it started, its claim would supersede the first)."""
        nonlocal newer
        newer = admit_in_ledger(settings, newer)
        await start_order(temporal_env.client, task_queue, newer, workflow_id=handle.id)

    _, status, _ = await _cancel_during_model_call(temporal_env, settings, sims, task_queue, first, then=signal_newer)
    assert status == WorkflowExecutionStatus.CANCELED
    versions = _versions(settings, first.work_key)
    assert {v: row.status for v, row in versions.items()} == {first.input_version: "cancelled",
                                                              newer.input_version: "cancelled"}
    assert versions[newer.input_version].result["steps"] == 0
    assert sims.model_stats()["calls"] == 1  # the newer order never reached the model



async def test_cancel_during_the_comment_post_stops_the_tool_call(temporal_env, settings, sims, task_queue):
    """The tool activity heartbeats too: a post hanging at the forge is cut off; its side effect stays
    ``in_flight`` (a later run of the version reconciles it before posting, as after a crash)."""
    from ledger import SideEffect

    order = admit_in_ledger(settings, work_order(settings, version=uuid.uuid4().hex + "2" * 8))
    sims.forge_ctl("POST", "/faults", json={"method": "POST", "path": "/comments$", "hang_seconds": 30, "times": 1})

    def posting() -> bool:
        return any(k.startswith("POST") and "comments" in k for k in sims.forge_ctl("GET", "/stats").json()["requests"])

    async with AsyncExitStack() as stack:
        async with await create_worker(temporal_env.client, settings, stack, task_queue):
            handle = await start_order(temporal_env.client, task_queue, order)
            deadline = time.monotonic() + 30
            while not posting():
                assert time.monotonic() < deadline, "the comment post never started"
                await asyncio.sleep(0.05)
            await handle.cancel()
            with pytest.raises(WorkflowFailureError):
                await handle.result()
            events = [e async for e in handle.fetch_history_events()]
    assert len([e for e in events if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED]) == 1
    version = _versions(settings, order.work_key)[order.input_version]
    assert (version.status, version.result["steps"]) == ("cancelled", 2)  # two model calls were spent, and kept
    engine = make_engine(settings.ledger_url())
    with Session(engine) as s:
        effects = list(s.exec(select(SideEffect).where(SideEffect.target_version == order.input_version)))
    engine.dispose()
    assert [e.status for e in effects] == ["in_flight"] and sims.comments() == []

