"""The composition root: the one place that assembles the worker and its activities from the settings.

Layers below never import it (``.importlinter``): activities, the API and the ledger receive what
they need here, already built. The parts the API builds too (ledger engine, forge client, intake
service) come from ``sluicegate.services``; the webhook API assembles itself from them in
``webhook_api.create_app``'s lifespan.

``worker.py`` is the thin entry that runs :func:`create_worker`.
"""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack
from datetime import timedelta

from sqlalchemy.engine import Engine
from temporalio.client import Client
from temporalio.worker import Worker

from activities.artifact_tools import ArtifactTools
from activities.artifacts import ArtifactStore
from activities.attempt_context import AttemptInterceptor
from activities.heartbeat import HeldBeatsInterceptor
from activities.local_activity_shutdown import LocalActivityShutdown
from activities.capacity_activities import CapacityActivities
from activities.egress import EgressPolicy
from activities.forge_tools import ForgeTools
from activities.gateway import ToolGateway
from activities.goal_activities import GoalActivities
from activities.intake_activity import IntakeActivities
from activities.maintenance import MaintenanceActivities
from activities.markers import CommentMarks
from activities.model import ModelActivities
from activities.model_credentials import ModelClients
from activities.policy_recheck import PolicyRecheckActivities
from activities.run_reconciler import ReconcileActivities, RunReconciler
from activities.scan_activities import ScanActivities
from activities.step_ledger import SpendGuard
from activities.task_tools import TaskTools
from activities.work_ledger import WorkLedgerActivities
from intake.capacity import CapacityPlanner
from intake.forge_reader import ForgeTargetReader
from intake.ports import Admitter
from ledger import (
    BreakerBoard, CapacityLedger, CredentialBroker, DayBudgets, DeferredQueue, KillSwitch, ModelJournal,
    PoisonLetters, SideEffectLedger, SqlIntakeStore, WatermarkStore, WorkStore,
)
from sluicegate.config.settings import Settings
from sluicegate.config.tenancy import scope_rules
from sluicegate.forge.client import ForgeClient
from sluicegate.observability.activity_telemetry import ActivityTelemetry
from sluicegate.services.intake import enabled_tasks, intake_service
from sluicegate.services.resources import open_forge, open_ledger
from sluicegate.temporal.admitter import TemporalAdmitter
from sluicegate.temporal.client import payload_keys
from sluicegate.temporal.sandbox_runner import workflow_runner
from sluicegate.temporal.schedules import retention_policy
from workflows.agent_loop import AgentLoopWorkflow
from workflows.capacity_contracts import DispatchRequest
from workflows.contracts import Price
from workflows.goal import GoalWorkflow
from workflows.maintenance import (
    DispatchDeferredWorkflow, OutboxRelayWorkflow, PruneDeliveriesWorkflow, ReapCapacityWorkflow, ReconcileRunsWorkflow,
    SettleStaleReservationsWorkflow,
)
from tasks import registry
from tasks.spec import TaskSpec
from workflows.scan import ScanWorkflow

log = logging.getLogger("sluicegate.worker")  # the worker's logger: its warnings keep their name


def trigger_activities(client: Client, settings: Settings, engine: Engine, forge: ForgeClient,
                       admitter: Admitter) -> list:
    """The activities of the schedule (scan) and goal trigger families, for :func:`create_worker`.

    Admission uses ``settings.temporal.task_queue`` for the agent workflow, like the API.
    """
    store, scope = SqlIntakeStore(engine, policy=settings.intake.policy()), scope_rules(settings)
    intake = IntakeActivities(intake_service(settings, engine, forge, admitter))
    scans = ScanActivities(forge, WatermarkStore(engine), store, engine, scope)
    goals = GoalActivities(forge, store, engine, scope, CommentMarks.from_forge_config(settings.forge))
    return [intake.submit, scans.list_candidates, scans.advance_watermark, scans.record_no_work, goals.observe,
            goals.record_bound_reached]


def task_activities(settings: Settings, forge: ForgeClient, gateway: ToolGateway, marks: CommentMarks,
                    egress: EgressPolicy) -> list:
    """The hosted tools of every enabled task (``activities/task_tools.py``); review's are built in."""
    def options(spec: TaskSpec) -> object:
        return getattr(settings.tasks, spec.config_section, None) if spec.config_section else None

    return TaskTools(enabled_tasks(settings), options, forge, gateway, marks, egress).activities()


def capacity_activities(client: Client, settings: Settings, engine: Engine, forge: ForgeClient,
                        admitter: Admitter) -> CapacityActivities:
    """The worker's capacity activities, wired from the settings."""
    cap = settings.capacity
    return CapacityActivities(client, CapacityLedger(engine), DeferredQueue(engine),
                              intake_service(settings, engine, forge, admitter),
                              PoisonLetters(engine, settings.dead_letters.owner_for), engine,
                              DispatchRequest(cap.dispatch_batch, cap.max_dispatch_failures, cap.defer_retry_seconds),
                              CapacityPlanner(cap.limits(settings.sources)), cap.aging_seconds)


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
    work = WorkLedgerActivities(work_store, settings.temporal.require_admission, settings.intake.policy())
    reconcile = ReconcileActivities(RunReconciler(client, work_store))
    admitter = TemporalAdmitter(client, settings, search_attributes)
    maintenance = MaintenanceActivities(SqlIntakeStore(engine), admitter, engine, artifacts,
                                        retention_policy(settings), spend.budgets)
    capacity = capacity_activities(client, settings, engine, forge, admitter)
    policy = PolicyRecheckActivities(settings.intake.policy(), ForgeTargetReader(forge),
                                     SqlIntakeStore(engine, policy=settings.intake.policy()),
                                     task_readers={s.name: s.reader(forge) for s in enabled_tasks(settings)})
    graceful = timedelta(seconds=settings.temporal.graceful_shutdown_seconds)
    return Worker(
        client, task_queue=task_queue or settings.temporal.task_queue,
        workflows=[AgentLoopWorkflow, OutboxRelayWorkflow, PruneDeliveriesWorkflow, ScanWorkflow, GoalWorkflow,
                   DispatchDeferredWorkflow, ReapCapacityWorkflow, ReconcileRunsWorkflow,
                   SettleStaleReservationsWorkflow],
        activities=[model.chat_completion, tools.get_pull_request_diff, tools.post_review_comment, reads.read_artifact,
                    work.record_run_outcome, work.claim_order, policy.recheck_policy, maintenance.relay_outbox,
                    maintenance.prune_deliveries, maintenance.prune_retention, maintenance.settle_stale_reservations,
                    capacity.release, capacity.dispatch, capacity.reap, reconcile.reconcile_runs,
                    *task_activities(settings, forge, gateway, marks, egress),
                    *trigger_activities(client, settings, engine, forge,
                                       TemporalAdmitter(client, settings, search_attributes))],
        workflow_runner=workflow_runner(),  # the SDK's sandbox, each entry compiled once (sandbox_runner.py)
        interceptors=[telemetry or ActivityTelemetry(registry.tool_activity_names()),
                      AttemptInterceptor(),  # receipts written by an activity name its attempt
                      HeldBeatsInterceptor(),  # a failing attempt sends its last progress (activities/heartbeat.py)
                      LocalActivityShutdown(graceful)],  # no sdk-core retry timer outlives the worker (module doc)
        graceful_shutdown_timeout=graceful,
        max_heartbeat_throttle_interval=timedelta(seconds=settings.temporal.heartbeat_throttle_seconds))
