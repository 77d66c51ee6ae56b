"""The capacity bench's harness: the burst, the simulated runs, the dispatcher, the sampler.

Real: ``IntakeService`` + ``SqlIntakeStore`` + ``CapacityGate`` + ``dispatch_once`` and the
forge simulator over HTTP. Simulated: the runs (:class:`SimulatedRuns`, a timer per run that
releases its slots and triggers a dispatch pass, as the agent workflow's release activity does).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime

import httpx

from sqlmodel import Session, select

from bench._common import head_sha
from bench._harness import every, stage
from intake.decision import Outcome
from ledger import Receipt
from ledger._sql import as_utc
from intake.capacity import CapacityPlanner
from intake.capacity.dispatch import DispatchReport, RoomCheck, dispatch_once
from intake.capacity.fairness import DEFAULT_AGING_SECONDS
from intake.capacity.gate import CapacityGate
from intake.envelope import Envelope, PullRequestRef, TriggerKind, WorkCandidate
from intake.forge_reader import ForgeTargetReader
from intake.identity import review_candidate, review_work_key, workflow_id_for
from intake.scope import ScopeRules
from intake.ports import Admission
from intake.service import IntakeService
from ledger import BreakerBoard, CapacityLedger, DeferredQueue, SqlIntakeStore
from sluicegate.config.capacity import CapacityConfig
from sluicegate.forge.client import ForgeClient

FORGE_TOKEN = "bench-forge-token"
FLOODER = "tenant-00"


def _log(line: str) -> None:
    print(line, flush=True)


@dataclass(frozen=True)
class Delivery:
    tenant: str
    ref: PullRequestRef
    head: str

    @property
    def work_key(self) -> str:
        return review_work_key(self.tenant, self.ref)


def burst(a: argparse.Namespace) -> list[Delivery]:
    """Seeded: the flooder's share, the rest uniform over the other tenants, interleaved at random."""
    rng = random.Random(a.seed)
    tenants = [FLOODER] + [f"tenant-{n:02d}" for n in range(1, a.tenants)]
    flood = round(a.deliveries * a.flood_share)
    owners = [tenants[0]] * flood + [rng.choice(tenants[1:]) for _ in range(a.deliveries - flood)]
    rng.shuffle(owners)
    numbers: Counter = Counter()
    out = []
    for owner in owners:
        repo = f"repo-{rng.randrange(a.repos)}"
        numbers[owner, repo] += 1
        ref = PullRequestRef(owner, repo, numbers[owner, repo])
        out.append(Delivery(owner, ref, head_sha("capacity-bench", a.seed, ref.target_id)))
    return out


async def create_pulls(base_url: str, items: list[Delivery]) -> None:
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
        sem = asyncio.Semaphore(32)

        async def one(d: Delivery) -> None:
            async with sem:
                r = await http.post(f"/_sim/pulls/{d.ref.owner}/{d.ref.repo}/{d.ref.number}", json={"head_sha": d.head})
                r.raise_for_status()
        await asyncio.gather(*(one(d) for d in items))


def admission_waits(engine) -> tuple[dict[str, tuple[str, float]], Counter]:
    """Per admitted work key: (tenant, admission receipt time - first receipt time in seconds);
    and every receipt counted by outcome/reason."""
    first: dict[str, datetime] = {}
    admitted: dict[str, datetime] = {}
    tenant_of: dict[str, str] = {}
    reasons: Counter = Counter()
    with Session(engine) as s:
        rows = s.execute(select(Receipt.work_key, Receipt.tenant, Receipt.outcome, Receipt.reason, Receipt.created_at))
        for key, tenant, outcome, reason, at in rows:
            at = as_utc(at)
            tenant_of[key] = tenant
            first[key] = min(first.get(key, at), at)
            if outcome == str(Outcome.ACCEPT):
                admitted[key] = at
            reasons[f"{outcome}/{reason}"] += 1
    return {key: (tenant_of[key], (at - first[key]).total_seconds()) for key, at in admitted.items()}, reasons


# --- simulated runs and the dispatcher ----------------------------------------------------------


class Dispatcher:
    """Dispatch passes, one at a time (as ``CapacityActivities._dispatch`` serializes them)."""

    def __init__(self, queue: DeferredQueue, capacity: CapacityLedger, batch: int,
                 aging_seconds: float | None = DEFAULT_AGING_SECONDS) -> None:
        self._queue, self._capacity, self._batch = queue, capacity, batch
        self._aging_seconds = aging_seconds
        self.service: IntakeService | None = None
        """Set once built (the service's admitter, :class:`SimulatedRuns`, needs this dispatcher)."""
        self._lock = asyncio.Lock()
        self.passes: Counter = Counter()
        self.totals: Counter = Counter()
        self.seconds: list[float] = []
        """Duration of each pass (lock held)."""
        self.rechecks: list[int] = []
        """Items decided again per pass (admitted, deferred again, dropped, dead)."""
        self.errors: list[str] = []

    async def run_pass(self, why: str) -> None:
        async with self._lock:
            t = time.perf_counter()
            try:
                active = await asyncio.to_thread(self._capacity.active_work_by_tenant)
                room = RoomCheck(await asyncio.to_thread(self._capacity.counters), self.service.capacity.planner)
                report: DispatchReport = await dispatch_once(
                    self._queue, self.service, {t: len(k) for t, k in active.items()}, batch=self._batch,
                    room=room, aging_seconds=self._aging_seconds)
            except Exception as exc:  # noqa: BLE001 - reported, and fails the bench
                self.errors.append(f"dispatch pass ({why}): {type(exc).__name__}: {exc}")
                return
            self.seconds.append(time.perf_counter() - t)
        self.rechecks.append(len(report.admitted) + report.deferred + len(report.dropped) + len(report.dead))
        self.passes[why] += 1
        self.totals.update(admitted=len(report.admitted), dropped=len(report.dropped), dead=len(report.dead),
                           deferred=report.deferred, skipped=report.skipped)


@dataclass
class Started:
    tenant: str
    repo: str
    seconds: float


class SimulatedRuns:
    """The ``intake.ports.Admitter`` port. No workflow starts: an admitted run "runs" for a seeded
    random duration on the event loop, then ends like the agent workflow's last activity does —
    its slots are released (``CapacityLedger.release``), then a dispatch pass runs.

    It counts runs in flight per limit key from ``admit`` until the run ends (before its slots
    are released), so its counts never exceed the ledger's holds: a count above a limit is a
    real over-admission."""

    def __init__(self, capacity: CapacityLedger, dispatcher: Dispatcher, rng: random.Random,
                 run_seconds: tuple[float, float]) -> None:
        self._capacity, self._dispatcher, self._rng, self._run = capacity, dispatcher, rng, run_seconds
        self.in_flight: Counter = Counter()
        self.max_seen: Counter = Counter()
        self.started: dict[str, Started] = {}
        self.admits: Counter = Counter()
        self.errors: list[str] = []
        self._tasks: set[asyncio.Task] = set()

    async def admit(self, admission: Admission) -> tuple[str, str | None]:
        c = admission.candidate
        slots = ("global", f"tenant:{c.tenant}", f"key:repo:{c.target.owner}/{c.target.repo}")
        for key in slots:
            self.in_flight[key] += 1
            self.max_seen[key] = max(self.max_seen[key], self.in_flight[key])
        seconds = self._rng.uniform(*self._run)
        self.admits[c.work_key] += 1
        self.started[c.work_key] = Started(c.tenant, f"{c.target.owner}/{c.target.repo}", seconds)
        asyncio.get_running_loop().call_later(seconds, self._end, c.work_key, slots)
        return workflow_id_for(c.work_key), f"sim-{self.admits.total()}"

    def _end(self, work_key: str, slots: tuple[str, ...]) -> None:
        for key in slots:
            self.in_flight[key] -= 1
        task = asyncio.get_running_loop().create_task(self._release(work_key))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _release(self, work_key: str) -> None:
        try:
            await asyncio.to_thread(self._capacity.release, work_key)
        except Exception as exc:  # noqa: BLE001 - reported, and fails the bench
            self.errors.append(f"release {work_key}: {type(exc).__name__}: {exc}")
        await self._dispatcher.run_pass("release")

    @property
    def busy(self) -> bool:
        return self.in_flight["global"] > 0 or bool(self._tasks)


class CounterSampler(threading.Thread):
    """Reads ``CapacityLedger.counters()`` every ``interval`` seconds; keeps each key's maximum."""

    def __init__(self, capacity: CapacityLedger, interval: float = 0.05) -> None:
        super().__init__(daemon=True, name="counter-sampler")
        self._capacity, self._interval = capacity, interval
        self.max_seen: Counter = Counter()
        self.samples = 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(self._interval):
            for key, active in self._capacity.counters().items():
                self.max_seen[key] = max(self.max_seen[key], active)
            self.samples += 1

    def stop(self) -> None:
        self._stop_event.set()
        self.join()


# --- the run ------------------------------------------------------------------------------------


@dataclass
class Result:
    drain_seconds: float = 0.0
    burst_seconds: float = 0.0
    forge_reads: int = 0
    answers: Counter = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)


def _envelope(d: Delivery) -> tuple[Envelope, WorkCandidate]:
    now = datetime.now(UTC)
    env = Envelope(id=f"bench-{d.work_key}", source="github", type="pull_request.opened", subject=d.ref.target_id,
                   time=now, received_at=now, trigger_kind=TriggerKind.EVENT, tenant=d.tenant)
    return env, review_candidate(d.tenant, d.ref, d.head)


async def drive(a, items: list[Delivery], engine, forge_url: str, cfg: CapacityConfig):
    forge = ForgeClient(forge_url, FORGE_TOKEN, timeout_seconds=10)
    capacity, queue = CapacityLedger(engine), DeferredQueue(engine)
    gate = CapacityGate(CapacityPlanner(cfg.limits({})), BreakerBoard(engine, cfg.breaker_policy()),
                        cfg.breaker_policy(), cfg.breaker.gating_providers, cfg.defer_retry_seconds)
    dispatcher = Dispatcher(queue, capacity, a.batch)
    runs = SimulatedRuns(capacity, dispatcher, random.Random(a.seed + 1), (a.run_ms[0] / 1000, a.run_ms[1] / 1000))
    service = IntakeService(SqlIntakeStore(engine), ForgeTargetReader(forge), runs, gate, scope=ScopeRules.everything())
    dispatcher.service = service
    sampler = CounterSampler(capacity)
    res = Result()
    todo: asyncio.Queue = asyncio.Queue()
    for d in items:
        todo.put_nowait(d)

    async def submitter() -> None:
        while not todo.empty():
            d = todo.get_nowait()
            try:
                decision = await service.submit(*_envelope(d))
                res.answers[f"{decision.outcome}/{decision.reason}"] += 1
            except Exception as exc:  # noqa: BLE001 - reported, and fails the bench
                res.failures.append(f"submit {d.work_key}: {type(exc).__name__}: {exc}")

    sampler.start()
    started = time.perf_counter()
    try:
        async with every(a.tick, lambda: dispatcher.run_pass("scheduled")):
            stage(f"capacity: submitting {len(items)} deliveries")
            await asyncio.gather(*(submitter() for _ in range(a.concurrency)))
            res.burst_seconds = time.perf_counter() - started
            _log(f"  burst submitted in {res.burst_seconds:.1f}s: {dict(res.answers)}")
            next_log = time.perf_counter() + 10
            while True:
                counts = await asyncio.to_thread(queue.counts)
                waiting = sum(n for (_, status), n in counts.items() if status == "waiting")
                if not waiting and not runs.busy:
                    break
                stage(f"capacity: draining, {len(runs.started)}/{len(items)} admitted, {waiting} waiting")
                if time.perf_counter() - started > a.timeout:
                    res.failures.append(f"not drained after {a.timeout:.0f}s: {waiting} waiting")
                    break
                if time.perf_counter() >= next_log:
                    _log(f"  {time.perf_counter() - started:5.0f}s: {len(runs.started)} admitted, {waiting} waiting, "
                         f"{runs.in_flight['global']} running, {sum(dispatcher.passes.values())} passes")
                    next_log += 10
                await asyncio.sleep(0.25)
            res.drain_seconds = time.perf_counter() - started
    finally:
        sampler.stop()
        await forge.aclose()
    res.failures += dispatcher.errors + runs.errors
    return res, runs, sampler, dispatcher, capacity


# --- report -------------------------------------------------------------------------------------
