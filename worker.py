"""Sluicegate worker: runs the agent workflow and its activities.

    python worker.py            # uses temporal-dev.yaml + environment overrides

Refuses to start when the ledger schema is not at the expected revision, so a worker
from a newer release never writes into an older schema. Stops gracefully on SIGTERM /
SIGINT: in-flight activities get the graceful-shutdown window to finish, and anything
cut off is retried elsewhere (side effects reconcile through the gateway).
"""

from __future__ import annotations

import asyncio
import logging
import signal
from contextlib import AsyncExitStack
from datetime import timedelta

from temporalio.client import Client
from temporalio.worker import Worker

from activities.artifact_tools import ArtifactTools
from activities.artifacts import ArtifactStore
from activities.attempt_context import AttemptInterceptor
from activities.capacity_activities import capacity_activities
from activities.egress import EgressPolicy
from activities.forge_tools import ForgeTools
from activities.gateway import ToolGateway
from activities.intake_activity import trigger_activities
from activities.maintenance import MaintenanceActivities
from activities.markers import CommentMarks
from activities.model import ModelActivities
from activities.model_credentials import ModelClients
from activities.policy_recheck import PolicyRecheckActivities
from activities.run_reconciler import ReconcileActivities, RunReconciler
from activities.step_ledger import SpendGuard
from activities.work_ledger import WorkLedgerActivities
from intake.forge_reader import ForgeTargetReader
from sluicegate.temporal.admitter import TemporalAdmitter
from ledger import (
    BreakerBoard, CapacityLedger, CredentialBroker, DeferredQueue, DayBudgets, KillSwitch, ModelJournal, SideEffectLedger,
    SqlIntakeStore, WorkStore,
)
from sluicegate.config.settings import Settings, load_settings
from sluicegate.config.dev_guard import refuse_published_secrets
from sluicegate.temporal.schedules import retention_policy
from sluicegate.services.resources import open_forge, open_ledger
from sluicegate.observability.activity_telemetry import ActivityTelemetry
from sluicegate.observability.ledger_gauges import ledger_reading, observe_ledger
from sluicegate.observability.metrics import observe_capacity, setup_metrics
from sluicegate.observability.prometheus_export import temporal_runtime
from sluicegate.observability.telemetry import setup_logging, setup_tracing
from sluicegate.temporal.client import connect, payload_keys
from workflows.agent_loop import AgentLoopWorkflow
from workflows.contracts import Price
from workflows.goal import GoalWorkflow
from workflows.review_task import TOOL_ACTIVITIES
from workflows.maintenance import (
    DispatchDeferredWorkflow, OutboxRelayWorkflow, PruneDeliveriesWorkflow, ReapCapacityWorkflow, ReconcileRunsWorkflow,
    SettleStaleReservationsWorkflow,
)
from workflows.scan import ScanWorkflow

log = logging.getLogger("sluicegate.worker")


async def create_worker(client: Client, settings: Settings, stack: AsyncExitStack,
                        task_queue: str | None = None, search_attributes: bool = True,
                        telemetry: ActivityTelemetry | None = None) -> Worker:
    """A worker with every Sluicegate workflow and activity; resources close with ``stack``.
    ``search_attributes=False`` only for servers without Sluicegate's (the time-skipping one).
    ``telemetry``: the activity interceptor whose heartbeat clock the process's gauge reads."""
    engine = open_ledger(settings, stack)
    forge = open_forge(settings, stack)
    model_clients = ModelClients.from_settings(settings)  # one client per tenant with its own key
    stack.push_async_callback(model_clients.close)
    kills = KillSwitch(engine)
    day = settings.budgets.day
    spend = SpendGuard(DayBudgets(engine, day.global_usd, day.tenants, day.default_tenant_usd),
                       {name: Price(**p.model_dump()) for name, p in settings.model.prices.items()},
                       settings.budgets.step_max_output_tokens)
    breakers = BreakerBoard(engine, settings.capacity.breaker_policy())
    journal = ModelJournal(engine)
    model = ModelActivities(model_clients, kills, spend, breakers, journal, settings.model.timeout_seconds)
    egress = EgressPolicy(tuple(settings.egress.default),
                          {t: tuple(hosts) for t, hosts in settings.egress.tenants.items()})
    artifacts = ArtifactStore(settings.path(settings.artifacts.dir), payload_keys(settings))
    gateway = ToolGateway(SideEffectLedger(engine), kills, CredentialBroker(engine), breakers)
    marks = CommentMarks.from_forge_config(settings.forge)
    if not marks.trusting:
        log.warning("forge.bot_login or forge.marker_secret is not set: after a crash a review may be posted "
                    "twice (reconcile cannot recognise its own comments)")
    tools = ForgeTools(forge, gateway, egress, artifacts, settings.artifacts.inline_limit_chars, marks,
                       settings.artifacts.read_max_chars)
    reads = ArtifactTools(artifacts, kills, settings.artifacts.read_max_chars)
    work_store = WorkStore(engine, settings.dead_letters.owner_for)
    work = WorkLedgerActivities(work_store, settings.temporal.require_admission)
    reconcile = ReconcileActivities(RunReconciler(client, work_store))
    admitter = TemporalAdmitter(client, settings, search_attributes)
    maintenance = MaintenanceActivities(SqlIntakeStore(engine), admitter, engine, artifacts,
                                        retention_policy(settings), spend.budgets)
    capacity = capacity_activities(client, settings, engine, forge, admitter)
    policy = PolicyRecheckActivities(settings.intake.policy(), ForgeTargetReader(forge),
                                     SqlIntakeStore(engine, policy=settings.intake.policy()))
    return Worker(
        client, task_queue=task_queue or settings.temporal.task_queue,
        workflows=[AgentLoopWorkflow, OutboxRelayWorkflow, PruneDeliveriesWorkflow, ScanWorkflow, GoalWorkflow,
                   DispatchDeferredWorkflow, ReapCapacityWorkflow, ReconcileRunsWorkflow,
                   SettleStaleReservationsWorkflow],
        activities=[model.chat_completion, tools.get_pull_request_diff, tools.post_review_comment, reads.read_artifact,
                    work.record_run_outcome, work.claim_order, policy.recheck_policy, maintenance.relay_outbox,
                    maintenance.prune_deliveries, maintenance.prune_retention, maintenance.settle_stale_reservations,
                    capacity.release, capacity.dispatch, capacity.reap, reconcile.reconcile_runs,
                    *trigger_activities(client, settings, engine, forge, search_attributes)],
        interceptors=[telemetry or ActivityTelemetry(TOOL_ACTIVITIES.values()),
                      AttemptInterceptor()],  # receipts written by an activity name its attempt
        graceful_shutdown_timeout=timedelta(seconds=10),
        max_heartbeat_throttle_interval=timedelta(seconds=settings.temporal.heartbeat_throttle_seconds))


async def main() -> None:
    settings = load_settings()
    refuse_published_secrets(settings, "worker", settings.temporal.address.rpartition(":")[0])
    setup_logging(settings, "worker")
    provider = setup_tracing(settings, "worker")
    setup_metrics(settings, "worker")
    client = await connect(settings, temporal_runtime(settings.telemetry))
    telemetry = ActivityTelemetry(TOOL_ACTIVITIES.values())
    telemetry.observe()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with AsyncExitStack() as stack:
        gauges = open_ledger(settings, stack)  # read at each metrics export
        queue = DeferredQueue(gauges)
        observe_capacity(CapacityLedger(gauges).counters,
                         lambda: {t: n for (t, status), n in queue.counts().items() if status == "waiting"})
        observe_ledger(ledger_reading(gauges, settings.capacity.breaker_policy(),
                                      settings.telemetry.prometheus.ledger_read_seconds))
        worker = await create_worker(client, settings, stack, telemetry=telemetry)
        async with worker:
            log.info("worker polling %s on %s/%s", settings.temporal.task_queue, settings.temporal.address,
                     settings.temporal.namespace)
            await stop.wait()
            log.info("shutting down")
    if provider is not None:
        provider.shutdown()


if __name__ == "__main__":
    from sluicegate.temporal.process_exit import run_then_exit

    run_then_exit(lambda: asyncio.run(main()))
