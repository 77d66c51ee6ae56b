"""The capacity bench's priority flood: two tenants, a steady stream of mixed priorities, aged vs strict.

Both tenants send deliveries at a steady rate a little above what the slots drain, for
``--flood-seconds``: mostly priority 2 (manual triggers), some 3 (events), some 4 (scheduled).
Under strict priority the priority-4 work waits until the higher levels stop arriving; with aging
(``capacity.aging_seconds``, scaled down like the runs) it is admitted within a bounded wait. The
same seeded workload runs twice on a fresh ledger each — aged, then strict — and the report puts
the wait of each priority side by side, the worst wait of the lowest priority first.

Real: ``IntakeService`` + ``SqlIntakeStore`` + ``CapacityGate`` + ``dispatch_once`` (with and
without aging) and the forge simulator over HTTP. Simulated: the runs (``SimulatedRuns``).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime

from bench._capacity import (
    FORGE_TOKEN, Delivery, Dispatcher, SimulatedRuns, admission_waits,
)
from bench._common import head_sha, percentile
from bench._harness import every
from intake.capacity import CapacityPlanner
from intake.capacity.gate import CapacityGate
from intake.envelope import Envelope, PullRequestRef, TriggerKind
from intake.forge_reader import ForgeTargetReader
from intake.identity import review_candidate
from intake.scope import ScopeRules
from intake.service import IntakeService
from ledger import BreakerBoard, CapacityLedger, DeferredQueue, SqlIntakeStore
from sluicegate.config.capacity import CapacityConfig
from sluicegate.forge.client import ForgeClient

KINDS = ((TriggerKind.MANUAL, 0.6), (TriggerKind.EVENT, 0.25), (TriggerKind.SCHEDULE, 0.15))
"""The mix of trigger kinds, hence priorities 2, 3 and 4 (``capacity.priority_by_trigger``)."""
TENANTS = ("tenant-00", "tenant-01")


@dataclass(frozen=True)
class FloodDelivery(Delivery):
    kind: TriggerKind = TriggerKind.EVENT
    at: float = 0.0
    """Seconds after the start at which it is sent."""


def flood_workload(a) -> list[FloodDelivery]:
    rng = random.Random(a.seed)
    count = round(a.flood_seconds * a.flood_rate)
    kinds, weights = zip(*KINDS, strict=True)
    out = []
    for n in range(count):
        tenant = TENANTS[n % 2]
        ref = PullRequestRef(tenant, f"repo-{rng.randrange(a.repos)}", n + 1)
        out.append(FloodDelivery(tenant, ref, head_sha("priority-flood", a.seed, ref.target_id),
                                 rng.choices(kinds, weights)[0], n / a.flood_rate))
    return out


@dataclass
class FloodRun:
    label: str
    aging_seconds: float | None
    waits: dict[int, list[float]] = field(default_factory=dict)
    admitted_twice: int = 0
    never_admitted: int = 0
    waiting_left: int = 0
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)


async def run_flood(a, items: list[FloodDelivery], engine, forge_url: str, cfg: CapacityConfig,
                    aging_seconds: float | None, label: str) -> FloodRun:
    forge = ForgeClient(forge_url, FORGE_TOKEN, timeout_seconds=10)
    capacity, queue = CapacityLedger(engine), DeferredQueue(engine)
    planner = CapacityPlanner(cfg.limits({}))
    gate = CapacityGate(planner, BreakerBoard(engine, cfg.breaker_policy()), cfg.breaker_policy(),
                        cfg.breaker.gating_providers, cfg.defer_retry_seconds)
    dispatcher = Dispatcher(queue, capacity, a.batch, aging_seconds)
    runs = SimulatedRuns(capacity, dispatcher, random.Random(a.seed + 1), (a.run_ms[0] / 1000, a.run_ms[1] / 1000))
    service = IntakeService(SqlIntakeStore(engine), ForgeTargetReader(forge), runs, gate, scope=ScopeRules.everything())
    dispatcher.service = service
    out = FloodRun(label, aging_seconds)
    started = time.perf_counter()

    async def send(d: FloodDelivery) -> None:
        now = datetime.now(UTC)
        env = Envelope(id=f"flood-{d.work_key}", source="github", type="pull_request.opened",
                       subject=d.ref.target_id, time=now, received_at=now, trigger_kind=d.kind, tenant=d.tenant)
        try:
            await service.submit(env, review_candidate(d.tenant, d.ref, d.head))
        except Exception as exc:  # noqa: BLE001 - reported, and fails the bench
            out.errors.append(f"submit {d.work_key}: {type(exc).__name__}: {exc}")

    sends: list[asyncio.Task] = []
    try:
        async with every(a.tick, lambda: dispatcher.run_pass("scheduled")):
            for d in items:
                await asyncio.sleep(max(0.0, d.at - (time.perf_counter() - started)))
                sends.append(asyncio.create_task(send(d)))
            await asyncio.gather(*sends)
            while time.perf_counter() - started < a.timeout:
                counts = await asyncio.to_thread(queue.counts)
                out.waiting_left = sum(n for (_, status), n in counts.items() if status == "waiting")
                if not out.waiting_left and not runs.busy:
                    break
                await asyncio.sleep(0.25)
            out.seconds = time.perf_counter() - started
    finally:
        await forge.aclose()
    priority_of = {d.work_key: planner.priority("github", d.kind) for d in items}
    waits, _ = admission_waits(engine)
    by_priority: dict[int, list[float]] = defaultdict(list)
    for key, (_, wait) in waits.items():
        by_priority[priority_of[key]].append(wait)
    out.waits = dict(by_priority)
    out.admitted_twice = sum(1 for n in runs.admits.values() if n > 1)
    out.never_admitted = len({d.work_key for d in items} - set(runs.started))
    out.errors += dispatcher.errors + runs.errors
    return out


def flood_rows(aged: FloodRun, strict: FloodRun) -> list[tuple[str, ...]]:
    """Per priority: deliveries, then p95 and worst wait aged and strict (seconds)."""
    rows = []
    for p in sorted(set(aged.waits) | set(strict.waits)):
        a, s = aged.waits.get(p, []), strict.waits.get(p, [])
        rows.append((str(p), f"{len(a):,}", f"{percentile(a, 95):.2f}", f"{max(a, default=float('nan')):.2f}",
                     f"{percentile(s, 95):.2f}", f"{max(s, default=float('nan')):.2f}"))
    return rows


def worst_lowest(run: FloodRun) -> tuple[int, float]:
    """The lowest priority (highest number) and its worst wait."""
    lowest = max(run.waits)
    return lowest, max(run.waits[lowest])


def verified(run: FloodRun) -> list[tuple[str, bool, str]]:
    return [(f"{run.label}: every delivery admitted exactly once", not run.admitted_twice and not run.never_admitted,
             f"{run.never_admitted} never, {run.admitted_twice} twice"),
            (f"{run.label}: deferred queue drained", run.waiting_left == 0, f"{run.waiting_left} waiting"),
            (f"{run.label}: no errors", not run.errors, "; ".join(run.errors[:3]) or "none")]

