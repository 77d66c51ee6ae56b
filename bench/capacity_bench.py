"""Sluicegate capacity benchmark: a burst of deliveries across tenants, against the limits.

    .venv/bin/python -m bench.capacity_bench                       # 5,000 deliveries, 20 tenants
    .venv/bin/python -m bench.capacity_bench --quick               # verification run: 100 deliveries, 5 tenants
    .venv/bin/python -m bench.capacity_bench --deliveries 800 --tenants 8
    .venv/bin/python -m bench.capacity_bench --postgres postgresql://postgres@127.0.0.1:5432/postgres
    .venv/bin/python -m bench.capacity_bench --priority-flood      # two tenants, mixed priorities, aged vs strict

One tenant (the flooder) sends ``--flood-share`` of the deliveries, the others share the
rest uniformly, in one seeded, interleaved burst. Each delivery is for its own open pull
request on the forge simulator. The gate, the ledger and the deferred queue are real
(``IntakeService`` + ``SqlIntakeStore`` + ``CapacityGate`` + ``dispatch_once``); the runs are
simulated by :class:`SimulatedRuns`. Prints time to drain, the maximum concurrency observed
against each limit and every tenant's wait p50/p95 (see bench/README.md).
``--priority-flood`` instead runs ``bench/_priority_flood.py``: two tenants send a steady stream of
priorities 2, 3 and 4 a little faster than the slots drain, once with aging and once strict, and
the report gives the worst wait of the lowest priority side by side.
Exit status: 1 when a limit was exceeded or the run did not verify, else 0.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import time
import traceback
from collections import Counter, defaultdict
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[1]

import httpx
from rich.console import Console
from rich.table import Table
from sqlmodel import Session, select

import ledger
from bench._common import percentile
from bench._dup import postgres_database
from bench._e2e import run_dir
from bench._harness import BenchReport, Measurement, config_of, finish, parser, stage
from bench._priority_flood import flood_rows, flood_workload, run_flood, verified, worst_lowest
from ledger import CapacityLedger, DeferredItem
from simulators import free_port, serve_in_thread
from simulators.forge import create_forge_app
from sluicegate.config.capacity import CapacityConfig, TenantCapacity
from bench._capacity import (
    FLOODER, FORGE_TOKEN, CounterSampler, Dispatcher, Result, SimulatedRuns, admission_waits, burst, create_pulls,
    drive,
)

console = Console(highlight=False, width=None if sys.stdout.isatty() else 140)


def _log(line: str) -> None:
    print(line, flush=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = parser(__doc__)
    p.add_argument("--deliveries", type=int, default=None, help="deliveries in the burst (default 5000; quick 100)")
    p.add_argument("--tenants", type=int, default=None, help="tenants, the flooder included (default 20; quick 5)")
    p.add_argument("--flood-share", type=float, default=0.5, help="the flooder's share (default %(default)s)")
    p.add_argument("--repos", type=int, default=3, help="repositories per tenant (default %(default)s)")
    p.add_argument("--global-limit", type=int, default=None,
                   help="global_active_runs (default 40; quick and priority flood 6)")
    p.add_argument("--tenant-limit", type=int, default=None, help="tenant max_active_runs (default 5; quick 3)")
    p.add_argument("--key-limit", type=int, default=2, help="concurrency_limit per repo (default %(default)s)")
    p.add_argument("--run-ms", type=float, nargs=2, default=None, metavar=("MIN", "MAX"),
                   help="simulated run duration, uniform (default 50 200; priority flood 400 800, so the "
                        "slots, not the gate, are the bottleneck)")
    p.add_argument("--defer-retry", type=float, default=30.0,
                   help="defer_retry_seconds (default %(default)s, as configured); items waiting for a slot "
                        "are due at every pass whatever it says, so it only delays quota/rate/breaker defers")
    p.add_argument("--tick", type=float, default=0.5,
                   help="seconds between scheduled dispatch passes (production: dispatch_interval_seconds, 15)")
    p.add_argument("--batch", type=int, default=200, help="dispatch batch (default %(default)s, as configured)")
    p.add_argument("--concurrency", type=int, default=16, help="deliveries submitted in flight (default %(default)s)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--priority-flood", action="store_true",
                   help="the two-tenant mixed-priority flood, aged vs strict (instead of the burst)")
    p.add_argument("--flood-seconds", type=float, default=None, help="how long the flood sends (default 30; quick 8)")
    p.add_argument("--flood-rate", type=float, default=None,
                   help="deliveries per second, both tenants (default 1.2 x the slots' drain rate)")
    p.add_argument("--aging", type=float, default=2.0,
                   help="aging_seconds for the aged run (default %(default)s: production's 120 s scaled to "
                        "simulated runs of a fraction of a second)")
    p.add_argument("--timeout", type=float, default=None,
                   help="give up draining after this many seconds (default 600; quick 120)")
    p.add_argument("--postgres", metavar="ADMIN_URL", default=None,
                   help="use a throwaway PostgreSQL database created through ADMIN_URL instead of SQLite")
    p.add_argument("--forge-thread", action="store_true",
                   help="run the forge simulator in a thread of this process (default: its own process)")
    a = p.parse_args(argv)
    a.deliveries = a.deliveries or (100 if a.quick else 5000)
    a.tenants = a.tenants or (5 if a.quick else 20)
    a.global_limit = a.global_limit or (6 if a.quick or a.priority_flood else 40)
    a.tenant_limit = a.tenant_limit or (3 if a.quick else 5)
    a.timeout = a.timeout or (120.0 if a.quick else 600.0)
    a.run_ms = a.run_ms or ((400.0, 800.0) if a.priority_flood else (50.0, 200.0))
    a.flood_seconds = a.flood_seconds or (8.0 if a.quick else 30.0)
    a.flood_rate = a.flood_rate or 1.2 * a.global_limit / (sum(a.run_ms) / 2000)
    if a.tenants < 2 or a.deliveries < a.tenants:
        p.error("need at least 2 tenants and one delivery per tenant")
    return a


# --- workload -----------------------------------------------------------------------------------


def waits_by_tenant(engine) -> tuple[dict[str, list[float]], Counter]:
    """Per tenant: admission time (the accept receipt) − first receipt time, in seconds."""
    waits, reasons = admission_waits(engine)
    out: dict[str, list[float]] = defaultdict(list)
    for tenant, wait in waits.values():
        out[tenant].append(wait)
    return out, reasons


def report(a, items, res: Result, runs: SimulatedRuns, sampler: CounterSampler, dispatcher: Dispatcher,
           capacity: CapacityLedger, engine, backend: str, m: Measurement) -> bool:
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
        m.checks.append(f"{'PASS' if within else 'FAIL'} {name}: limit {limit}, max runs {seen_runs}, "
                        f"max counter {seen_ctr}")
        m.figures.setdefault("max_concurrency", {})[name] = {"limit": limit, "runs": seen_runs, "counter": seen_ctr}
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

    m.figures.update(deliveries=len(items), drain_seconds=res.drain_seconds, burst_seconds=res.burst_seconds,
                     deliveries_per_second=len(items) / res.drain_seconds if res.drain_seconds else None,
                     forge_reads_per_delivery=res.forge_reads / len(items), wait_p95_flooder=p95_flood,
                     wait_p95_others=p95_others, answers=dict(res.answers))
    m.ratios = {"wait_p95_flooder_per_others": p95_flood / p95_others if p95_others else None}
    for name, passed, detail in checks:
        ok &= passed
        m.checks.append(f"{'PASS' if passed else 'FAIL'} {name}: {detail}")
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


def _main(a) -> BenchReport:
    tmp = run_dir()
    drop = None
    rep = BenchReport("capacity_bench", config_of(a))
    limits = f"limits under test: global {a.global_limit}, tenant {a.tenant_limit}, per repository {a.key_limit}"
    m = rep.add(Measurement("capacity burst", f"{limits}; simulated runs drain (SimulatedRuns release their slots, "
                            "then a dispatch pass runs)", verified=False))
    try:
        url, backend, drop = _ledger(a, tmp, "ledger")
        ledger.upgrade(url)
        engine = ledger.make_engine(url)
        cfg = CapacityConfig(global_active_runs=a.global_limit,
                             tenant_defaults=TenantCapacity(max_active_runs=a.tenant_limit),
                             concurrency_limit=a.key_limit, defer_retry_seconds=a.defer_retry, dispatch_batch=a.batch)
        items = burst(a)
        _log(f"capacity bench ({backend}){' (quick: verification, not speed)' if a.quick else ''}: {len(items)} "
             f"deliveries, {a.tenants} tenants, flood share {a.flood_share}, {limits}, "
             f"runs {a.run_ms[0]:.0f}-{a.run_ms[1]:.0f} ms, seed {a.seed}")
        with forge_simulator(a.forge_thread) as forge_url:
            t = time.perf_counter()
            stage(f"capacity burst: creating {len(items)} pull requests")
            asyncio.run(create_pulls(forge_url, items))
            _log(f"  {len(items)} pull requests created on the forge simulator in {time.perf_counter() - t:.1f}s")
            before = _forge_reads(forge_url)
            res, *parts = asyncio.run(drive(a, items, engine, forge_url, cfg))
            res.forge_reads = _forge_reads(forge_url) - before
        m.figures["backend"] = backend
        m.verified = report(a, items, res, *parts, engine=engine, backend=backend, m=m)
        engine.dispose()
    except Exception as exc:  # noqa: BLE001 - a broken bench fails its verification
        traceback.print_exc()
        m.error = f"{type(exc).__name__}: {exc}"
    finally:
        if drop is not None:
            drop()
        if a.keep:
            _log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return rep


def _ledger(a, tmp: Path, name: str):
    """A fresh ledger: (url, backend, drop or None)."""
    if not a.postgres:
        return f"sqlite:///{tmp / (name + '.sqlite')}", "SQLite", None
    db = postgres_database(a.postgres)
    if isinstance(db, str):
        raise RuntimeError(db)
    return db[0], "PostgreSQL", db[1]


def _flood_main(a) -> BenchReport:
    tmp = run_dir()
    rep = BenchReport("capacity_bench", config_of(a))
    m = rep.add(Measurement("priority flood, aged vs strict",
                            f"global limit {a.global_limit}; simulated runs drain", verified=False))
    items = flood_workload(a)
    cfg = CapacityConfig(global_active_runs=a.global_limit, defer_retry_seconds=a.defer_retry, dispatch_batch=a.batch)
    _log(f"priority flood: {len(items)} deliveries over {a.flood_seconds:g} s ({a.flood_rate:.1f}/s), 2 tenants, "
         f"priorities {dict(sorted(Counter(k for k in (d.kind.value for d in items)).items()))}, global limit "
         f"{a.global_limit}, runs {a.run_ms[0]:.0f}-{a.run_ms[1]:.0f} ms, aging {a.aging:g} s vs strict, seed {a.seed}")
    runs = []
    try:
        with forge_simulator(a.forge_thread) as forge_url:
            stage(f"priority flood: creating {len(items)} pull requests")
            asyncio.run(create_pulls(forge_url, items))
            for aging, label in ((a.aging, "aged"), (None, "strict")):
                url, backend, drop = _ledger(a, tmp, label)
                try:
                    ledger.upgrade(url)
                    engine = ledger.make_engine(url)
                    stage(f"priority flood: {label} run, {a.flood_seconds:g} s of deliveries, then draining")
                    runs.append(asyncio.run(run_flood(a, items, engine, forge_url, cfg, aging, label)))
                    engine.dispose()
                finally:
                    if drop is not None:
                        drop()
        aged, strict = runs
        t = Table(title=f"Wait by priority, s ({backend}; admission receipt - first receipt): aged "
                        f"(aging_seconds {a.aging:g}) vs strict")
        for col in ("priority", "deliveries", "aged p95", "aged max", "strict p95", "strict max"):
            t.add_column(col, justify="right")
        for row in flood_rows(aged, strict):
            t.add_row(*row)
        console.print(t)
        (p, worst_aged), (_, worst_strict) = worst_lowest(aged), worst_lowest(strict)
        _log(f"worst p{p} wait: {worst_aged:.2f} s aged vs {worst_strict:.2f} s strict")
        m.figures.update(backend=backend, deliveries=len(items), lowest_priority=p, worst_wait_lowest_aged=worst_aged,
                         worst_wait_lowest_strict=worst_strict, aging_seconds=a.aging)
        ok = True
        for name, passed, detail in verified(aged) + verified(strict):
            ok &= passed
            m.checks.append(f"{'PASS' if passed else 'FAIL'} {name}: {detail}")
            console.print(f"{'[green]PASS[/]' if passed else '[red]FAIL[/]'} {name}: {detail}")
        m.verified = ok
    except Exception as exc:  # noqa: BLE001 - a broken bench fails its verification
        traceback.print_exc()
        m.error = f"{type(exc).__name__}: {exc}"
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return rep


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    return finish(a, lambda: _flood_main(a) if a.priority_flood else _main(a), "capacity_bench")


if __name__ == "__main__":
    sys.exit(main())
