"""Sluicegate capacity benchmark: a burst of deliveries across tenants, against the limits.

    .venv/bin/python bench/capacity_bench.py                       # 5,000 deliveries, 20 tenants
    .venv/bin/python bench/capacity_bench.py --deliveries 800 --tenants 8
    .venv/bin/python bench/capacity_bench.py --postgres postgresql://postgres@127.0.0.1:5432/postgres

One tenant (the flooder) sends ``--flood-share`` of the deliveries, the others share the
rest uniformly, in one seeded, interleaved burst. Each delivery is for its own open pull
request on the forge simulator. The gate, the ledger and the deferred queue are real
(``IntakeService`` + ``SqlIntakeStore`` + ``CapacityGate`` + ``dispatch_once``); the runs are
simulated by :class:`SimulatedRuns`. Prints time to drain, the maximum concurrency observed
against each limit and every tenant's wait p50/p95 (see bench/README.md).
Exit status: 1 when a limit was exceeded or the run did not verify, else 0.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import subprocess
import sys
import threading
import time
import traceback
from collections import Counter, defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402
from sqlmodel import Session, select  # noqa: E402

import ledger  # noqa: E402
from bench._common import head_sha, percentile  # noqa: E402
from bench._dup import postgres_database  # noqa: E402
from bench._e2e import run_dir  # noqa: E402
from intake.capacity import CapacityPlanner  # noqa: E402
from intake.capacity.dispatch import DispatchReport, RoomCheck, dispatch_once  # noqa: E402
from intake.capacity.gate import CapacityGate  # noqa: E402
from intake.decision import Outcome  # noqa: E402
from intake.envelope import Envelope, PullRequestRef, TriggerKind, WorkCandidate  # noqa: E402
from intake.forge_reader import ForgeTargetReader  # noqa: E402
from intake.identity import review_work_key, workflow_id_for  # noqa: E402
from intake.ports import Admission  # noqa: E402
from intake.service import IntakeService  # noqa: E402
from ledger import BreakerBoard, CapacityLedger, DeferredItem, DeferredQueue, Receipt, SqlIntakeStore  # noqa: E402
from ledger._sql import as_utc  # noqa: E402
from simulators import free_port, serve_in_thread  # noqa: E402
from simulators.forge import create_forge_app  # noqa: E402
from sluicegate.capacity_config import CapacityConfig, TenantCapacity  # noqa: E402
from sluicegate.forge_client import ForgeClient  # noqa: E402

FORGE_TOKEN = "bench-forge-token"
FLOODER = "tenant-00"
console = Console(highlight=False, width=None if sys.stdout.isatty() else 140)


def _log(line: str) -> None:
    print(line, flush=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--deliveries", type=int, default=5000, help="deliveries in the burst (default %(default)s)")
    p.add_argument("--tenants", type=int, default=20, help="tenants, the flooder included (default %(default)s)")
    p.add_argument("--flood-share", type=float, default=0.5, help="the flooder's share (default %(default)s)")
    p.add_argument("--repos", type=int, default=3, help="repositories per tenant (default %(default)s)")
    p.add_argument("--global-limit", type=int, default=40, help="global_active_runs (default %(default)s)")
    p.add_argument("--tenant-limit", type=int, default=5, help="tenant max_active_runs (default %(default)s)")
    p.add_argument("--key-limit", type=int, default=2, help="concurrency_limit per repo (default %(default)s)")
    p.add_argument("--run-ms", type=float, nargs=2, default=(50.0, 200.0), metavar=("MIN", "MAX"),
                   help="simulated run duration, uniform (default 50 200)")
    p.add_argument("--defer-retry", type=float, default=30.0,
                   help="defer_retry_seconds (default %(default)s, as configured); items waiting for a slot "
                        "are due at every pass whatever it says, so it only delays quota/rate/breaker defers")
    p.add_argument("--tick", type=float, default=0.5,
                   help="seconds between scheduled dispatch passes (production: dispatch_interval_seconds, 15)")
    p.add_argument("--batch", type=int, default=200, help="dispatch batch (default %(default)s, as configured)")
    p.add_argument("--concurrency", type=int, default=16, help="deliveries submitted in flight (default %(default)s)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--timeout", type=float, default=600.0, help="give up draining after this many seconds")
    p.add_argument("--postgres", metavar="ADMIN_URL", default=None,
                   help="use a throwaway PostgreSQL database created through ADMIN_URL instead of SQLite")
    p.add_argument("--forge-thread", action="store_true",
                   help="run the forge simulator in a thread of this process (default: its own process)")
    p.add_argument("--keep", action="store_true", help="keep the temp directory (SQLite ledger)")
    a = p.parse_args(argv)
    if a.tenants < 2 or a.deliveries < a.tenants:
        p.error("need at least 2 tenants and one delivery per tenant")
    return a


# --- workload -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Delivery:
    tenant: str
    ref: PullRequestRef
    head: str

    @property
    def work_key(self) -> str:
        return review_work_key(self.ref)


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


# --- simulated runs and the dispatcher ----------------------------------------------------------


class Dispatcher:
    """Dispatch passes, one at a time (as ``CapacityActivities._dispatch`` serializes them)."""

    def __init__(self, queue: DeferredQueue, capacity: CapacityLedger, batch: int) -> None:
        self._queue, self._capacity, self._batch = queue, capacity, batch
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
                    room=room)
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
    return env, WorkCandidate(d.work_key, d.ref, d.head, d.tenant)


async def drive(a, items: list[Delivery], engine, forge_url: str, cfg: CapacityConfig):
    forge = ForgeClient(forge_url, FORGE_TOKEN, timeout_seconds=10)
    capacity, queue = CapacityLedger(engine), DeferredQueue(engine)
    gate = CapacityGate(CapacityPlanner(cfg.limits({})), BreakerBoard(engine, cfg.breaker_policy()),
                        cfg.breaker_policy(), cfg.breaker.gating_providers, cfg.defer_retry_seconds)
    dispatcher = Dispatcher(queue, capacity, a.batch)
    runs = SimulatedRuns(capacity, dispatcher, random.Random(a.seed + 1), (a.run_ms[0] / 1000, a.run_ms[1] / 1000))
    service = IntakeService(SqlIntakeStore(engine), ForgeTargetReader(forge), runs, gate)
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

    async def ticker(stop: asyncio.Event) -> None:
        while not stop.is_set():
            await dispatcher.run_pass("scheduled")
            try:
                await asyncio.wait_for(stop.wait(), a.tick)
            except TimeoutError:
                pass

    sampler.start()
    stop = asyncio.Event()
    started = time.perf_counter()
    tick = asyncio.create_task(ticker(stop))
    try:
        await asyncio.gather(*(submitter() for _ in range(a.concurrency)))
        res.burst_seconds = time.perf_counter() - started
        _log(f"  burst submitted in {res.burst_seconds:.1f}s: {dict(res.answers)}")
        next_log = time.perf_counter() + 10
        while True:
            counts = await asyncio.to_thread(queue.counts)
            waiting = sum(n for (_, status), n in counts.items() if status == "waiting")
            if not waiting and not runs.busy:
                break
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
        stop.set()
        await tick
        sampler.stop()
        await forge.aclose()
    res.failures += dispatcher.errors + runs.errors
    return res, runs, sampler, dispatcher, capacity


# --- report -------------------------------------------------------------------------------------


def waits_by_tenant(engine) -> tuple[dict[str, list[float]], Counter]:
    """Per tenant: admission time (the accept receipt) − first receipt time, in seconds."""
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
    out: dict[str, list[float]] = defaultdict(list)
    for key, at in admitted.items():
        out[tenant_of[key]].append((at - first[key]).total_seconds())
    return out, reasons


def report(a, items, res: Result, runs: SimulatedRuns, sampler: CounterSampler, dispatcher: Dispatcher,
           capacity: CapacityLedger, engine, backend: str) -> bool:
    ok = not res.failures
    flooder = FLOODER
    per_tenant = Counter(d.tenant for d in items)
    waits, receipts = waits_by_tenant(engine)

    # Verification: each delivery admitted exactly once, the queue drained, every slot given back.
    checks = []
    twice = [k for k, n in runs.admits.items() if n > 1]
    missing = {d.work_key for d in items} - set(runs.started)
    states = Counter(i.status for i in _items(engine))
    leftover = {k: v for k, v in capacity.counters().items() if v}
    checks.append(("every delivery admitted exactly once", not missing and not twice,
                   f"{len(runs.started)} admitted, {len(missing)} never, {len(twice)} twice"))
    checks.append(("deferred queue drained", states.get("waiting", 0) == 0 and not states.get("dead"),
                   ", ".join(f"{k} {v}" for k, v in sorted(states.items())) or "never used"))
    checks.append(("every slot released", not leftover and not capacity.holds(), f"non-zero counters: {leftover}"))
    checks.append(("no errors", not res.failures, f"{len(res.failures)} errors"))

    t = Table(title=f"Capacity burst ({backend}): {len(items):,} deliveries, {a.tenants} tenants, "
                    f"flooder {per_tenant[flooder]:,} ({a.flood_share:.0%})")
    for col in ("measure", "value"):
        t.add_column(col, justify="left" if col == "measure" else "right")
    busy = sum(s.seconds for s in runs.started.values())
    floor = max(busy / a.global_limit, *(v / a.tenant_limit for v in _busy_by(runs, lambda s: s.tenant).values()),
                *(v / a.key_limit for v in _busy_by(runs, lambda s: s.repo).values()))
    t.add_row("time to drain (first submit -> last run ended, queue empty)", f"{res.drain_seconds:.1f} s")
    t.add_row("  of which submitting the burst", f"{res.burst_seconds:.1f} s")
    t.add_row("  floor: the limits alone (max of run-seconds / limit over every counter)", f"{floor:.1f} s")
    t.add_row("deliveries/s (deliveries / drain)", f"{len(items) / res.drain_seconds:,.1f}")
    t.add_row("global slot utilisation (run-seconds / (limit x drain))",
              f"{busy / (a.global_limit * res.drain_seconds):.0%}")
    t.add_row("answers to the burst", ", ".join(f"{k} {v:,}" for k, v in sorted(res.answers.items())))
    t.add_row("receipts", ", ".join(f"{k} {v:,}" for k, v in sorted(receipts.items())))
    t.add_row("forge reads (GET) per delivery", f"{res.forge_reads / len(items):.2f} ({res.forge_reads:,})")
    t.add_row("dispatch passes (release / scheduled)",
              f"{dispatcher.passes['release']:,} / {dispatcher.passes['scheduled']:,}")
    t.add_row("dispatch pass ms p50 / p95 / max (lock held)",
              " / ".join(f"{percentile(dispatcher.seconds, p) * 1000:,.0f}" for p in (50, 95, 100)))
    t.add_row("items re-decided per pass p50 / p95 / max",
              " / ".join(f"{percentile(dispatcher.rechecks, p):,.0f}" for p in (50, 95, 100)))
    t.add_row("dispatch outcomes", ", ".join(f"{k} {v:,}" for k, v in sorted(dispatcher.totals.items())))
    console.print(t)

    lim = Table(title="Maximum concurrency observed vs. limits (runs: SimulatedRuns in flight; "
                      f"counters: ledger, sampled every 50 ms, {sampler.samples:,} samples)")
    for col in ("limit", "configured", "max runs", "max counter", "verdict"):
        lim.add_column(col, justify="left" if col in ("limit", "verdict") else "right")
    for name, prefix, limit in (("global active runs", "global", a.global_limit),
                                ("tenant max_active_runs (worst tenant)", "tenant:", a.tenant_limit),
                                ("concurrency_limit per repo (worst repo)", "key:", a.key_limit)):
        seen_runs = max((v for k, v in runs.max_seen.items() if k.startswith(prefix)), default=0)
        seen_ctr = max((v for k, v in sampler.max_seen.items() if k.startswith(prefix)), default=0)
        within = seen_runs <= limit and seen_ctr <= limit
        ok &= within
        verdict = "[red]FAIL[/]" if not within else "[green]OK[/]" if max(seen_runs, seen_ctr) == limit else \
            "[yellow]OK, never reached[/] (the check proves little)"
        lim.add_row(name, str(limit), str(seen_runs), str(seen_ctr), verdict)
    console.print(lim)

    ten = Table(title="Wait per tenant, s (admission receipt - first receipt)")
    for col in ("tenant", "deliveries", "max running", "wait p50", "wait p95", "wait max"):
        ten.add_column(col, justify="left" if col == "tenant" else "right")
    for tenant in sorted(per_tenant):
        w = waits.get(tenant, [])
        ten.add_row(tenant + (" (flooder)" if tenant == flooder else ""), f"{per_tenant[tenant]:,}",
                    str(runs.max_seen[f"tenant:{tenant}"]), f"{percentile(w, 50):.2f}", f"{percentile(w, 95):.2f}",
                    f"{max(w, default=float('nan')):.2f}")
    others = [x for t_, w in waits.items() if t_ != flooder for x in w]
    p95_flood, p95_others = percentile(waits.get(flooder, []), 95), percentile(others, 95)
    ten.add_row("others, pooled", f"{len(others):,}", "-", f"{percentile(others, 50):.2f}", f"{p95_others:.2f}",
                f"{max(others, default=float('nan')):.2f}")
    console.print(ten)
    _log(f"flooder p95 / others p95 = {p95_flood:.2f} / {p95_others:.2f} = "
         f"{p95_flood / p95_others if p95_others else float('inf'):.1f}x")

    for name, passed, detail in checks:
        ok &= passed
        console.print(f"{'[green]PASS[/]' if passed else '[red]FAIL[/]'} {name}: {detail}")
    for line in res.failures[:20]:
        console.print(f"[red]ERROR[/] {line}", markup=True)
    _log("Caveats: the runs are simulated (SimulatedRuns: a timer of "
         f"{a.run_ms[0]:.0f}-{a.run_ms[1]:.0f} ms, no Temporal, no model); the gate, the ledger transactions, "
         "the deferred queue and the dispatcher are real, and every delivery is re-read from the forge simulator "
         "over HTTP. The webhook HTTP layer (signature, parsing) is not in the path. "
         f"Scheduled passes run every {a.tick:g} s (production: 15), scaled to the simulated runs; most passes "
         "follow a run's end, as in production. Intake, dispatcher and runs share one Python process"
         + (" with the forge simulator (a thread)." if a.forge_thread else "; the forge simulator has its own."))
    return ok


def _busy_by(runs: SimulatedRuns, key) -> Counter:
    """Run-seconds per tenant or per repository."""
    out: Counter = Counter()
    for s in runs.started.values():
        out[key(s)] += s.seconds
    return out


def _items(engine) -> list[DeferredItem]:
    with Session(engine) as s:
        return list(s.exec(select(DeferredItem)).all())


@contextmanager
def forge_simulator(in_thread: bool) -> Iterator[str]:
    """The forge simulator over HTTP: its own process by default (on 2 cores a thread of this
    process would take the gate's interpreter lock for every read), or ``serve_in_thread``."""
    if in_thread:
        with serve_in_thread(create_forge_app(token=FORGE_TOKEN)) as srv:
            yield srv.base_url
        return
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "simulators.forge", "--port", str(port), "--token", FORGE_TOKEN,
                             "--log-level", "warning"], cwd=ROOT, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.get(f"{url}/_sim/health", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"forge simulator did not start (exit {proc.poll()})") from None
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def _forge_reads(url: str) -> int:
    stats = httpx.get(f"{url}/_sim/stats", timeout=10).raise_for_status().json()
    return sum(n for route, n in stats["requests"].items() if route.startswith("GET "))


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    tmp = run_dir()
    drop = None
    try:
        if a.postgres:
            db = postgres_database(a.postgres)
            if isinstance(db, str):
                _log(db)
                return 1
            url, drop = db
            backend = "PostgreSQL"
        else:
            url, backend = f"sqlite:///{tmp / 'ledger.sqlite'}", "SQLite"
        ledger.upgrade(url)
        engine = ledger.make_engine(url)
        cfg = CapacityConfig(global_active_runs=a.global_limit,
                             tenant_defaults=TenantCapacity(max_active_runs=a.tenant_limit),
                             concurrency_limit=a.key_limit, defer_retry_seconds=a.defer_retry, dispatch_batch=a.batch)
        items = burst(a)
        _log(f"capacity bench ({backend}): {len(items)} deliveries, {a.tenants} tenants, flood share {a.flood_share}, "
             f"limits global {a.global_limit} / tenant {a.tenant_limit} / repo {a.key_limit}, "
             f"runs {a.run_ms[0]:.0f}-{a.run_ms[1]:.0f} ms, seed {a.seed}")
        with forge_simulator(a.forge_thread) as forge_url:
            t = time.perf_counter()
            asyncio.run(create_pulls(forge_url, items))
            _log(f"  {len(items)} pull requests created on the forge simulator in {time.perf_counter() - t:.1f}s")
            before = _forge_reads(forge_url)
            res, *parts = asyncio.run(drive(a, items, engine, forge_url, cfg))
            res.forge_reads = _forge_reads(forge_url) - before
        ok = report(a, items, res, *parts, engine=engine, backend=backend)
        engine.dispose()
        return 0 if ok else 1
    except Exception:  # noqa: BLE001 - a broken bench exits 1
        traceback.print_exc()
        return 1
    finally:
        if drop is not None:
            drop()
        if a.keep:
            _log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
