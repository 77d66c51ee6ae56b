"""Temporal Schedules from ``temporal-dev.yaml`` (``schedules:``): build, apply, list, operate.

Each configured schedule becomes a Temporal Schedule whose action starts a ``Scan``
workflow (``workflows/scan.py``) with workflow id ``scan/<schedule id>`` (Temporal appends
the tick's time) on ``temporal.task_queue``. :func:`apply_schedules` is idempotent: it
creates missing schedules and updates existing ones in place, keeping their paused state
and note (pausing is an operator decision, never undone by a deploy). See docs/schedules.md
for the catch-up and overlap rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from temporalio.client import (
    Client, Schedule, ScheduleActionStartWorkflow, ScheduleAlreadyRunningError, ScheduleBackfill,
    ScheduleIntervalSpec, ScheduleOverlapPolicy, SchedulePolicy, ScheduleSpec, ScheduleState, ScheduleUpdate,
    ScheduleUpdateInput,
)

from sluicegate.config.settings import ScheduleConfig, Settings
from workflows.maintenance_contracts import PruneRequest, RelayRequest, RetentionPolicy, StaleReservationsRequest
from workflows.capacity_contracts import DISPATCH_WORKFLOW, REAP_WORKFLOW, DispatchRequest, ReapRequest
from workflows.scan_contracts import SCAN_WORKFLOW, ScanRequest
from workflows.stranded import RECONCILE_WORKFLOW, ReconcileRequest
from workflows.names import (  # noqa: F401  (schedule ids re-exported)
    DISPATCH_SCHEDULE, OUTBOX_RELAY_SCHEDULE, OUTBOX_RELAY_WORKFLOW, PRUNE_DELIVERIES_SCHEDULE, PRUNE_DELIVERIES_WORKFLOW,
    REAP_SCHEDULE, RECONCILE_SCHEDULE, SETTLE_STALE_WORKFLOW, STALE_RESERVATIONS_SCHEDULE,
)

OVERLAP_POLICIES: dict[str, ScheduleOverlapPolicy] = {
    "skip": ScheduleOverlapPolicy.SKIP,
    "buffer_one": ScheduleOverlapPolicy.BUFFER_ONE,
    "buffer_all": ScheduleOverlapPolicy.BUFFER_ALL,
    "cancel_other": ScheduleOverlapPolicy.CANCEL_OTHER,
    "terminate_other": ScheduleOverlapPolicy.TERMINATE_OTHER,
    "allow_all": ScheduleOverlapPolicy.ALLOW_ALL,
}


def overlap_policy(name: str | None) -> ScheduleOverlapPolicy | None:
    if name is None:
        return None
    try:
        return OVERLAP_POLICIES[name.lower().replace("-", "_")]
    except KeyError:
        raise ValueError(f"unknown overlap policy {name!r} (one of {', '.join(OVERLAP_POLICIES)})") from None


def scan_workflow_id(schedule_id: str) -> str:
    """The scan's workflow id prefix; Temporal appends ``-<tick time>``."""
    return f"scan/{schedule_id}"


def scan_request_for(schedule_id: str, cfg: ScheduleConfig) -> ScanRequest:
    return ScanRequest(scan_id=schedule_id, tenant=cfg.tenant, repos=[r.lower() for r in cfg.repos],
                       max_candidates=cfg.max_candidates)


def spec_for(cfg: ScheduleConfig) -> ScheduleSpec:
    return ScheduleSpec(
        intervals=[ScheduleIntervalSpec(every=cfg.interval)] if cfg.interval is not None else [],
        cron_expressions=[cfg.cron] if cfg.cron is not None else [],
        jitter=cfg.jitter or None, time_zone_name=cfg.time_zone)


def schedule_for(schedule_id: str, cfg: ScheduleConfig, settings: Settings) -> Schedule:
    """The Temporal Schedule for one configured entry (its state is used only on create)."""
    action = ScheduleActionStartWorkflow(
        SCAN_WORKFLOW, scan_request_for(schedule_id, cfg), id=scan_workflow_id(schedule_id),
        task_queue=settings.temporal.task_queue, execution_timeout=cfg.scan_timeout)
    policy = SchedulePolicy(overlap=OVERLAP_POLICIES[cfg.overlap], catchup_window=cfg.catchup_window,
                            pause_on_failure=cfg.pause_on_failure)
    return Schedule(action=action, spec=spec_for(cfg), policy=policy,
                    state=ScheduleState(note=cfg.note, paused=cfg.start_paused))


def retention_policy(settings: Settings) -> RetentionPolicy:
    """``maintenance.retention`` as the prune workflow carries it."""
    r = settings.maintenance.retention
    return RetentionPolicy(r.ages_seconds(), r.batch_size, r.max_batches)


def stale_reservations_request(settings: Settings) -> StaleReservationsRequest:
    """The sweep's grace must outlast a live attempt, or it would charge a call still running."""
    grace = settings.budgets.stale_reservations.grace_seconds
    longest = settings.activities.model_start_to_close_seconds
    if grace <= longest:
        raise ValueError(f"budgets.stale_reservations.grace_seconds ({grace:g}) must exceed "
                         f"activities.model_start_to_close_seconds ({longest:g})")
    return StaleReservationsRequest(grace_seconds=grace)


def maintenance_schedules(settings: Settings) -> dict[str, Schedule]:
    """The outbox relay, the delivery-window and retention pruning, the deferred-queue dispatcher, the
    slot reaper, the run reconciler and the stale-reservation sweep: skip overlaps, take one missed tick."""
    m, queue = settings.maintenance, settings.temporal.task_queue
    policy = SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP, catchup_window=timedelta(minutes=1))
    relay = ScheduleActionStartWorkflow(OUTBOX_RELAY_WORKFLOW, RelayRequest(grace_seconds=m.outbox_grace_seconds),
                                        id=OUTBOX_RELAY_SCHEDULE, task_queue=queue,
                                        execution_timeout=timedelta(minutes=10))
    prune_req = PruneRequest(window_hours=m.delivery_dedupe_window_hours, retention=retention_policy(settings))
    prune = ScheduleActionStartWorkflow(PRUNE_DELIVERIES_WORKFLOW, prune_req,
                                        id=PRUNE_DELIVERIES_SCHEDULE, task_queue=queue,
                                        execution_timeout=timedelta(minutes=30))
    cap = settings.capacity
    dispatch_req = DispatchRequest(cap.dispatch_batch, cap.max_dispatch_failures, cap.defer_retry_seconds)
    dispatch = ScheduleActionStartWorkflow(DISPATCH_WORKFLOW, dispatch_req, id=DISPATCH_SCHEDULE, task_queue=queue,
                                           execution_timeout=timedelta(minutes=10))
    reap = ScheduleActionStartWorkflow(REAP_WORKFLOW, ReapRequest(cap.reap_grace_seconds, dispatch_req),
                                       id=REAP_SCHEDULE, task_queue=queue, execution_timeout=timedelta(minutes=10))
    reconcile = ScheduleActionStartWorkflow(RECONCILE_WORKFLOW, ReconcileRequest(m.reconcile_grace_seconds),
                                            id=RECONCILE_SCHEDULE, task_queue=queue,
                                            execution_timeout=timedelta(minutes=15))
    stale = ScheduleActionStartWorkflow(SETTLE_STALE_WORKFLOW, stale_reservations_request(settings),
                                        id=STALE_RESERVATIONS_SCHEDULE, task_queue=queue,
                                        execution_timeout=timedelta(minutes=10))

    def every(seconds: float) -> ScheduleSpec:
        return ScheduleSpec(intervals=[ScheduleIntervalSpec(every=timedelta(seconds=seconds))])

    return {
        DISPATCH_SCHEDULE: Schedule(action=dispatch, policy=policy, spec=every(cap.dispatch_interval_seconds)),
        REAP_SCHEDULE: Schedule(action=reap, policy=policy, spec=every(cap.reap_interval_seconds)),
        RECONCILE_SCHEDULE: Schedule(action=reconcile, policy=policy,
                                     spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=m.reconcile_interval)])),
        STALE_RESERVATIONS_SCHEDULE: Schedule(action=stale, policy=policy,
                                              spec=every(settings.budgets.stale_reservations.interval_seconds)),
        OUTBOX_RELAY_SCHEDULE: Schedule(action=relay, policy=policy,
                                        spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=m.outbox_relay_interval)])),
        PRUNE_DELIVERIES_SCHEDULE: Schedule(action=prune, policy=policy,
                                            spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=m.prune_interval)])),
    }


def desired_schedules(settings: Settings, only: list[str] | None = None) -> dict[str, Schedule]:
    """Every schedule the configuration declares, scans and maintenance (``only``: a subset by
    id; unknown ids fail)."""
    every = {sid: schedule_for(sid, cfg, settings) for sid, cfg in settings.schedules.items()}
    every.update(maintenance_schedules(settings))
    unknown = sorted(set(only or ()) - set(every))
    if unknown:
        raise KeyError(f"not in the configuration's schedules: {', '.join(unknown)}")
    return {sid: schedule for sid, schedule in every.items() if not only or sid in only}


async def apply_schedules(client: Client, settings: Settings, only: list[str] | None = None) -> dict[str, str]:
    """Create or update each configured schedule; returns ``{id: "created" | "updated"}``."""
    done: dict[str, str] = {}
    for sid, schedule in desired_schedules(settings, only).items():
        try:
            await client.create_schedule(sid, schedule)
            done[sid] = "created"
        except ScheduleAlreadyRunningError:
            def keep_state(current: ScheduleUpdateInput, schedule: Schedule = schedule) -> ScheduleUpdate:
                schedule.state = current.description.schedule.state
                return ScheduleUpdate(schedule=schedule)

            await client.get_schedule_handle(sid).update(keep_state)
            done[sid] = "updated"
    return done


@dataclass
class ScheduleRow:
    id: str
    in_config: bool
    paused: bool
    note: str | None
    spec: str
    overlap: str
    catchup_window: str
    actions: int
    missed_catchup: int
    skipped_overlap: int
    running: int
    last_action: datetime | None
    next_action: datetime | None


def _spec_text(spec: ScheduleSpec) -> str:
    parts = [f"every {i.every}" for i in spec.intervals] + [f"cron {c!r}" for c in spec.cron_expressions]
    if spec.calendars:
        parts.append(f"{len(spec.calendars)} calendar(s)")
    if spec.time_zone_name:
        parts.append(spec.time_zone_name)
    if spec.jitter:
        parts.append(f"jitter {spec.jitter}")
    return ", ".join(parts) or "-"


async def describe_schedules(client: Client, settings: Settings) -> list[ScheduleRow]:
    """Every schedule in the namespace plus any configured one not created yet."""
    ids = [s.id async for s in await client.list_schedules()]
    rows = []
    configured = set(desired_schedules(settings))
    for sid in sorted(set(ids) | configured):
        try:
            d = await client.get_schedule_handle(sid).describe()
        except Exception:  # noqa: BLE001 - configured but not applied yet (or deleted meanwhile)
            rows.append(ScheduleRow(sid, sid in configured, False, "not created (run `schedule apply`)",
                                    "-", "-", "-", 0, 0, 0, 0, None, None))
            continue
        pol, info = d.schedule.policy, d.info
        rows.append(ScheduleRow(
            id=sid, in_config=sid in configured, paused=d.schedule.state.paused, note=d.schedule.state.note,
            spec=_spec_text(d.schedule.spec), overlap=pol.overlap.name.lower(),
            catchup_window=str(pol.catchup_window) if pol.catchup_window else "server default",
            actions=info.num_actions, missed_catchup=info.num_actions_missed_catchup_window,
            skipped_overlap=info.num_actions_skipped_overlap, running=len(info.running_actions),
            last_action=info.recent_actions[-1].started_at if info.recent_actions else None,
            next_action=info.next_action_times[0] if info.next_action_times else None))
    return rows


async def trigger(client: Client, schedule_id: str, overlap: str | None = None) -> None:
    await client.get_schedule_handle(schedule_id).trigger(overlap=overlap_policy(overlap))


async def pause(client: Client, schedule_id: str, reason: str) -> None:
    await client.get_schedule_handle(schedule_id).pause(note=reason)


async def unpause(client: Client, schedule_id: str, reason: str) -> None:
    await client.get_schedule_handle(schedule_id).unpause(note=reason)


async def backfill(client: Client, schedule_id: str, start: datetime, end: datetime,
                   overlap: str | None = None) -> None:
    """Take the actions the schedule's spec matches in ``(start, end]`` now, as if that time passed.
    Not limited by the catch-up window; ``overlap`` overrides the schedule's policy for them."""
    if end <= start:
        raise ValueError("backfill end must be after its start")
    await client.get_schedule_handle(schedule_id).backfill(
        ScheduleBackfill(start_at=start, end_at=end, overlap=overlap_policy(overlap)))
