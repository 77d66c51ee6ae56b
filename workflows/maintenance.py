"""Scheduled maintenance workflows: one activity each, so a schedule's history stays small.

``OutboxRelayWorkflow`` admits accepted-but-not-admitted work (see ``intake.outbox``);
``PruneDeliveriesWorkflow`` enforces the delivery dedupe window (and forgets old journaled model
answers); ``SettleStaleReservationsWorkflow`` ends day-budget reservations whose worker died. All
are safe to run concurrently with intake, with runs and with each other.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from activities.maintenance import (
        PruneRequest, RelayRequest, RelayResult, StaleReservationsRequest, StaleReservationsResult,
    )
    from workflows.capacity_contracts import (
        DISPATCH_WORKFLOW, REAP_WORKFLOW, DispatchRequest, DispatchResult, ReapRequest,
    )

RETRY = RetryPolicy(maximum_attempts=5, maximum_interval=timedelta(seconds=30))


@workflow.defn(name="OutboxRelay")
class OutboxRelayWorkflow:
    @workflow.run
    async def run(self, req: RelayRequest) -> RelayResult:
        return await workflow.execute_activity(
            "sluicegate.maintenance.relay_outbox", req, result_type=RelayResult,
            start_to_close_timeout=timedelta(minutes=5), retry_policy=RETRY)


@workflow.defn(name="PruneDeliveries")
class PruneDeliveriesWorkflow:
    @workflow.run
    async def run(self, req: PruneRequest) -> int:
        return await workflow.execute_activity(
            "sluicegate.maintenance.prune_deliveries", req, result_type=int,
            start_to_close_timeout=timedelta(minutes=10), retry_policy=RETRY)


@workflow.defn(name="SettleStaleReservations")
class SettleStaleReservationsWorkflow:
    """End reservations still held after the grace period: journaled usage, else the estimate."""

    @workflow.run
    async def run(self, req: StaleReservationsRequest) -> StaleReservationsResult:
        return await workflow.execute_activity(
            "sluicegate.maintenance.settle_stale_reservations", req, result_type=StaleReservationsResult,
            start_to_close_timeout=timedelta(minutes=5), retry_policy=RETRY)


@workflow.defn(name=DISPATCH_WORKFLOW)
class DispatchDeferredWorkflow:
    """Scheduled pass over the deferred queue (runs also end with one, after their release)."""

    @workflow.run
    async def run(self, req: DispatchRequest) -> DispatchResult:
        return await workflow.execute_activity(
            "sluicegate.capacity.dispatch", req, result_type=DispatchResult,
            start_to_close_timeout=timedelta(minutes=10), retry_policy=RETRY)


@workflow.defn(name=REAP_WORKFLOW)
class ReapCapacityWorkflow:
    """Free slots whose run is no longer open in Temporal (terminated, timed out, lost)."""

    @workflow.run
    async def run(self, req: ReapRequest) -> DispatchResult:
        return await workflow.execute_activity(
            "sluicegate.capacity.reap", req, result_type=DispatchResult,
            start_to_close_timeout=timedelta(minutes=10), heartbeat_timeout=timedelta(minutes=2), retry_policy=RETRY)
