"""Builds the capacity gate and the intake service from the settings (API and worker alike)."""

from __future__ import annotations

from sqlalchemy.engine import Engine

from intake.capacity import CapacityPlanner
from intake.capacity.gate import CapacityGate
from intake.forge_reader import ForgeTargetReader
from intake.ports import Admitter, TaskIntake
from intake.seen_deliveries import DEFAULT_TTL_SECONDS, SeenDeliveries
from intake.service import IntakeService
from intake.shared_reads import SharedReads
from intake.unread import UnreadPolicy
from intake.kill_gate import KillGate
from ledger import BreakerBoard, KillSwitch, SqlIntakeStore
from sluicegate.config.settings import ConfigError, Settings
from sluicegate.observability.metrics import record_decision
from sluicegate.config.tenancy import scope_rules
from tasks import registry
from tasks.spec import TaskSpec


def capacity_gate(settings: Settings, engine: Engine) -> CapacityGate:
    cap = settings.capacity
    return CapacityGate(CapacityPlanner(cap.limits(settings.sources)), BreakerBoard(engine, cap.breaker_policy()),
                        cap.breaker_policy(), cap.breaker.gating_providers, cap.defer_retry_seconds)


def unread_policy(settings: Settings) -> UnreadPolicy:
    cfg = settings.intake
    return UnreadPolicy(cfg.freshness_deadline_seconds, cfg.source_retry_seconds, cfg.source_retry_max_seconds,
                        cfg.max_source_lag_seconds)


def enabled_tasks(settings: Settings) -> tuple[TaskSpec, ...]:
    """The registered tasks ``tasks.enabled`` names; a name not registered is a configuration error
    (``ConfigError``: the API and the worker stop at start with the configuration's exit code)."""
    try:
        return registry.enabled(settings.tasks.enabled)
    except registry.UnknownTask as exc:
        raise ConfigError(f"tasks.enabled: {exc}") from None


def task_intake(settings: Settings, forge) -> dict[str, TaskIntake]:
    """Each enabled task's reader (its own shared reads: flights and snapshots never cross tasks) and rules."""
    seconds = settings.intake.freshness_snapshot_seconds
    return {spec.name: TaskIntake(SharedReads(spec.reader(forge), seconds, task=spec.name, freshness=spec.freshness),
                                  spec.freshness, spec.policy, spec.ordered_versions)
            for spec in enabled_tasks(settings)}


def intake_service(settings: Settings, engine: Engine, forge, admitter: Admitter) -> IntakeService:
    policy = settings.intake.policy()
    window = settings.maintenance.delivery_dedupe_window_hours  # a kept answer never outlives the window
    store = SqlIntakeStore(engine, max_readmissions=settings.intake.max_readmissions_per_version, policy=policy)
    tasks = task_intake(settings, forge)
    review = tasks.get("review")
    targets = review.reader if review is not None else SharedReads(ForgeTargetReader(forge),
                                                                   settings.intake.freshness_snapshot_seconds)
    return IntakeService(store, targets, admitter, capacity_gate(settings, engine),
                         scope=scope_rules(settings), on_decision=record_decision, unread=unread_policy(settings),
                         kills=KillGate(KillSwitch(engine)), policy=policy, tasks=tasks,
                         max_skew_seconds=settings.intake.max_clock_skew_seconds,
                         seen=SeenDeliveries(ttl_seconds=min(DEFAULT_TTL_SECONDS, window * 3600)))
