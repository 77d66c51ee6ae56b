"""Ending work orders inside the agent workflow: record the outcome, give capacity back, and do
both for every open order when the workflow is cancelled — in a scope that cannot be cancelled.

Workflow code (deterministic): only activities, no I/O. Failure modes it is written against:

* Cancel while an activity runs. With ``WAIT_CANCELLATION_COMPLETED`` (patched runs) the
  workflow waits until the activity has stopped — it heartbeats, so it sees the cancel within a
  heartbeat throttle interval and ends its day-budget reservation (charged at its estimate: the
  call may have been billed) — before the cleanup records the order. A worker that died meanwhile delays this by at most the heartbeat timeout.
* Cancel while the outcome or the release is being written. Those activities cannot see a
  cancel (they do not heartbeat); waiting for them keeps one record per order instead of a
  second write racing the first.
* Cancel during the cleanup itself (a second request, a buggy caller). ``uncancellable`` keeps
  awaiting the cleanup task until it is done, so the workflow never closes with a half-written
  ledger.
* An outcome or release activity that exhausts its retries: the outcome raises (the workflow
  fails, the reconciler gives the version its outcome later); a release is logged and left to
  the capacity reaper.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Awaitable, TypeVar

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError
from temporalio.workflow import ActivityCancellationType

with workflow.unsafe.imports_passed_through():
    from workflows.cancellation import CancelAttribution
    from workflows.capacity_contracts import ReleaseRequest
    from workflows.contracts import RunOutcome, RunStatus, TokenUsage, WorkOrder
    from workflows.failures import failure_type
    from workflows.names import RECORD_OUTCOME_ACTIVITY, RELEASE_CAPACITY_ACTIVITY
    from workflows.lean_steps import finish_then_cancel, ledger_activity

_LEDGER_RETRY = RetryPolicy(maximum_attempts=10, maximum_interval=timedelta(seconds=30))
T = TypeVar("T")


def cancellation_type(cancel_aware: bool) -> ActivityCancellationType:
    """Patched runs wait for a cancelled activity to stop; older histories keep TRY_CANCEL."""
    return ActivityCancellationType.WAIT_CANCELLATION_COMPLETED if cancel_aware else ActivityCancellationType.TRY_CANCEL


async def record_outcome(outcome: RunOutcome, cancel_aware: bool) -> None:
    await finish_then_cancel(ledger_activity(
        RECORD_OUTCOME_ACTIVITY, outcome, start_to_close_timeout=timedelta(seconds=30), retry_policy=_LEDGER_RETRY,
        cancellation_type=cancellation_type(cancel_aware)))


async def release_capacity(work_key: str, newest_generation: int, cancel_aware: bool) -> None:
    """Give the run's slots back (those taken up to ``newest_generation``) and let the deferred
    queue into the room. A run that never gets here (terminated) is reaped."""
    try:
        await finish_then_cancel(ledger_activity(
            RELEASE_CAPACITY_ACTIVITY, ReleaseRequest(work_key, newest_generation),
            start_to_close_timeout=timedelta(minutes=2), retry_policy=_LEDGER_RETRY,
            cancellation_type=cancellation_type(cancel_aware)))
    except ActivityError as err:  # the run's work is done; never fail it for this
        workflow.logger.warning("could not release the capacity of %s (%s); the reaper will",
                                work_key, failure_type(err), extra={"work_key": work_key})


async def uncancellable(work: Awaitable[T]) -> T:
    """Await ``work`` to its end even if this task is cancelled again meanwhile (``asyncio.shield``
    alone would return at the second cancel and leave the cleanup running past the workflow)."""
    task = asyncio.ensure_future(work)
    while True:
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.done():
                raise


def mark_cancelled(outcome: RunOutcome, who: CancelAttribution) -> RunOutcome:
    """The order in progress, stopped by the cancel: its spend so far stays on the outcome."""
    outcome.status, outcome.reason, outcome.cancel_request = RunStatus.CANCELLED, who.outcome_reason, who.request_id
    return outcome


def cancelled_before_start(order: WorkOrder, run_id: str, who: CancelAttribution) -> RunOutcome:
    """A pending order that never ran: cancelled with the run, no step spent."""
    return RunOutcome(order.work_key, order.input_version, order.generation, RunStatus.CANCELLED,
                      who.outcome_reason, usage=TokenUsage(), run_id=run_id, receipt_id=order.receipt_id,
                      tenant=order.tenant, source=order.source, cancel_request=who.request_id)

