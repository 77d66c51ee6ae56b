"""Scheduled maintenance workflows: one activity each, so a schedule's history stays small.

``OutboxRelayWorkflow`` admits accepted-but-not-admitted work (see ``intake.outbox``);
``PruneDeliveriesWorkflow`` enforces the delivery dedupe window and then (patch
``prune-retention``) every other table's retention rule — old journaled model answers and cancel
requests included — and the artifacts' age; ``ReconcileRunsWorkflow`` gives versions whose run
closed without an outcome their real one (``workflows/stranded.py``);
``SettleStaleReservationsWorkflow`` ends day-budget reservations whose worker died. All are safe
to run concurrently with intake, with runs and with each other: nothing load-bearing is ever pruned.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from workflows.maintenance_contracts import (
        PruneRequest, RelayRequest, RelayResult, RetentionReport, StaleReservationsRequest, StaleReservationsResult,
    )
    from workflows.capacity_contracts import (
        DISPATCH_WORKFLOW, REAP_WORKFLOW, DispatchRequest, DispatchResult, ReapRequest,
    )
    from workflows.stranded import RECONCILE_ACTIVITY, RECONCILE_WORKFLOW, ReconcileRequest, ReconcileResult
    from workflows.typed_activity import execute_typed
    from workflows.names import (
        DISPATCH_ACTIVITY, OUTBOX_RELAY_WORKFLOW, PRUNE_DELIVERIES_ACTIVITY, PRUNE_DELIVERIES_WORKFLOW,
        PRUNE_RETENTION_ACTIVITY, REAP_ACTIVITY, RELAY_OUTBOX_ACTIVITY, SETTLE_STALE_ACTIVITY, SETTLE_STALE_WORKFLOW,
    )

RETRY = RetryPolicy(maximum_attempts=5, maximum_interval=timedelta(seconds=30))

PRUNE_RETENTION_PATCH = "prune-retention"
"""After the delivery window, one more activity prunes every other growing table by its retention rule."""


@workflow.defn(name=OUTBOX_RELAY_WORKFLOW)
class OutboxRelayWorkflow:
    @workflow.run
    async def run(self, req: RelayRequest) -> RelayResult:
        return await execute_typed(
            RELAY_OUTBOX_ACTIVITY, req, result_type=RelayResult,
            start_to_close_timeout=timedelta(minutes=5), retry_policy=RETRY)


@workflow.defn(name=PRUNE_DELIVERIES_WORKFLOW)
class PruneDeliveriesWorkflow:
    @workflow.run
    async def run(self, req: PruneRequest) -> int:
        """Rows removed: delivery ids, plus (patched) every table's and artifact's pruned by retention."""
        removed = await execute_typed(
            PRUNE_DELIVERIES_ACTIVITY, req, result_type=int,
            start_to_close_timeout=timedelta(minutes=10), retry_policy=RETRY)
        if workflow.patched(PRUNE_RETENTION_PATCH):
            report = await workflow.execute_activity(
                PRUNE_RETENTION_ACTIVITY, req, result_type=RetentionReport,
                start_to_close_timeout=timedelta(minutes=20), heartbeat_timeout=timedelta(minutes=2),
                retry_policy=RETRY)
            removed += sum(report.removed.values())
        return removed


@workflow.defn(name=SETTLE_STALE_WORKFLOW)
class SettleStaleReservationsWorkflow:
    """End reservations still held after the grace period: journaled usage, else the estimate."""

    @workflow.run
    async def run(self, req: StaleReservationsRequest) -> StaleReservationsResult:
        return await execute_typed(
            SETTLE_STALE_ACTIVITY, req, result_type=StaleReservationsResult,
            start_to_close_timeout=timedelta(minutes=5), retry_policy=RETRY)


@workflow.defn(name=DISPATCH_WORKFLOW)
class DispatchDeferredWorkflow:
    """Scheduled pass over the deferred queue (runs also end with one, after their release)."""

    @workflow.run
    async def run(self, req: DispatchRequest) -> DispatchResult:
        return await execute_typed(
            DISPATCH_ACTIVITY, req, result_type=DispatchResult,
            start_to_close_timeout=timedelta(minutes=10), retry_policy=RETRY)


@workflow.defn(name=REAP_WORKFLOW)
class ReapCapacityWorkflow:
    """Free slots whose run is no longer open in Temporal (terminated, timed out, lost)."""

    @workflow.run
    async def run(self, req: ReapRequest) -> DispatchResult:
        return await execute_typed(
            REAP_ACTIVITY, req, result_type=DispatchResult,
            start_to_close_timeout=timedelta(minutes=10), heartbeat_timeout=timedelta(minutes=2), retry_policy=RETRY)


@workflow.defn(name=RECONCILE_WORKFLOW)
class ReconcileRunsWorkflow:
    """Compare open versions with Temporal's view of their runs; record what closed runs left open."""

    @workflow.run
    async def run(self, req: ReconcileRequest) -> ReconcileResult:
        return await execute_typed(
            RECONCILE_ACTIVITY, req, result_type=ReconcileResult,
            start_to_close_timeout=timedelta(minutes=10), heartbeat_timeout=timedelta(minutes=2), retry_policy=RETRY)
