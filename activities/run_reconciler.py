"""The run reconciler: every version whose run closed without recording an outcome gets its real one.

Compares the ledger's open versions (``admitted``: a run owns them) with Temporal's view of
the run that owns each — described by workflow id and the run id the version was signalled
into, following continue-as-new to the run that carried it on. Still running: nothing to do.
Closed: the outcome its close status implies (``workflows/stranded.py``), written only if the
version is still open — a run that records its own outcome meanwhile wins — and, for all but a
cancel, with a dead letter carrying Temporal's evidence (failure message, termination reason).

Never touches ``accepted`` versions: those belong to the outbox relay, however old, and the
relay admits them. Failure modes: Temporal unreachable → the pass fails and the schedule's next
tick retries; a describe that fails for one version (anything but not-found) is logged and the
version is looked at again next pass; a version whose workflow or run is not found (deleted, or
past retention) is recorded ``failed`` with a letter, since nothing else will ever close it.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import asdict
from typing import Callable

from temporalio import activity
from temporalio.api.enums.v1 import EventType
from temporalio.api.failure.v1 import Failure
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle, WorkflowHistoryEventFilterType
from temporalio.service import RPCError, RPCStatusCode

from ledger import OpenVersion, WorkStore
from sluicegate.observability.metrics import record_outcome
from workflows.contracts import RunOutcome
from workflows.stranded import (
    NOT_FOUND, OPEN_STATUSES, RECONCILE_ACTIVITY, ClosedRun, ReconcileRequest, ReconcileResult, outcome_for,
)

log = logging.getLogger("sluicegate.reconcile")
MAX_CHAIN = 50
"""Continue-as-new hops followed per version in one pass; a longer chain is resumed next pass."""


class RunReconciler:
    def __init__(self, client: Client, store: WorkStore) -> None:
        self._client = client
        self._store = store

    async def reconcile(self, req: ReconcileRequest, beat: Callable[[str], None] = lambda _: None) -> ReconcileResult:
        versions = await asyncio.to_thread(self._store.open_versions, OPEN_STATUSES, req.grace_seconds, req.limit)
        result = ReconcileResult()
        for version in versions:
            beat(version.work_key)
            try:
                closed = await self.closed_run(version.workflow_id, version.run_id) if version.workflow_id else None
            except RPCError as err:
                log.warning("cannot describe %s (%s); next pass", version.workflow_id, err,
                            extra={"work_key": version.work_key})
                closed = None
            if closed is None:
                result.open += 1
            elif await self._settle(version, closed):
                result.settled.append(f"{version.work_key}@{version.input_version}: {outcome_for(closed)[0]}")
            else:
                result.raced += 1
        return result

    async def _settle(self, v: OpenVersion, closed: ClosedRun) -> bool:
        status, reason = outcome_for(closed)
        outcome = RunOutcome(v.work_key, v.input_version, v.generation, status, reason, run_id=closed.run_id,
                             receipt_id=v.receipt_id, last_error=closed.detail or None, tenant=v.tenant,
                             source=v.source)
        recorded = await asyncio.to_thread(
            self._store.record_outcome, work_key=v.work_key, input_version=v.input_version, generation=v.generation,
            status=status, run_id=closed.run_id, result=asdict(outcome), receipt_id=v.receipt_id,
            only_from=OPEN_STATUSES)
        if recorded:
            record_outcome(outcome)
            log.warning("reconciled %s@%s: its run %s closed %s without an outcome; recorded %s (%s)",
                        v.work_key, v.input_version, closed.run_id, closed.status, status, reason,
                        extra={"work_key": v.work_key})
        return recorded

    async def closed_run(self, workflow_id: str, run_id: str | None) -> ClosedRun | None:
        """How the run chain starting at ``run_id`` ended, or None while it is still open."""
        for _ in range(MAX_CHAIN):
            handle = self._client.get_workflow_handle(workflow_id, run_id=run_id)
            try:
                desc = await handle.describe()
            except RPCError as err:
                if err.status == RPCStatusCode.NOT_FOUND:
                    return ClosedRun(NOT_FOUND, run_id)
                raise
            if desc.status in (None, WorkflowExecutionStatus.RUNNING):
                return None
            close = await _close_event(handle)
            if desc.status == WorkflowExecutionStatus.CONTINUED_AS_NEW:
                run_id = close.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
                continue
            return ClosedRun(desc.status.name, desc.run_id, _detail(close))
        return None


async def _close_event(handle: WorkflowHandle) -> HistoryEvent:
    async for event in handle.fetch_history_events(
            event_filter_type=WorkflowHistoryEventFilterType.CLOSE_EVENT):
        return event
    raise RPCError("closed run without a close event", RPCStatusCode.INTERNAL, b"")


def _detail(event: HistoryEvent) -> str:
    if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
        return _failure_text(event.workflow_execution_failed_event_attributes.failure)
    if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED:
        attrs = event.workflow_execution_terminated_event_attributes
        return f"{attrs.reason or 'no reason given'} (by {attrs.identity or 'unknown'})"
    return ""


def _failure_text(failure: Failure) -> str:
    """``Type: message`` of the failure and its causes, outermost first."""
    parts = []
    for _ in range(5):
        kind = failure.application_failure_info.type if failure.HasField("application_failure_info") else ""
        parts.append(f"{kind}: {failure.message}" if kind else failure.message)
        if not failure.HasField("cause"):
            break
        failure = failure.cause
    return "; ".join(p for p in parts if p)[:500]


class ReconcileActivities:
    def __init__(self, reconciler: RunReconciler) -> None:
        self._reconciler = reconciler

    @activity.defn(name=RECONCILE_ACTIVITY)
    async def reconcile_runs(self, req: ReconcileRequest) -> ReconcileResult:
        result = await self._reconciler.reconcile(req, beat=activity.heartbeat)
        if result.settled:
            activity.logger.warning("reconciled %d stranded version(s): %s", len(result.settled),
                                    ", ".join(result.settled))
        return result
