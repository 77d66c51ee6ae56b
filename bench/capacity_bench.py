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

import asyncio
import shutil
import sys
import time
import traceback
from collections import Counter

import ledger
from bench._capacity import FORGE_TOKEN, burst, create_pulls, drive
from bench._capacity_options import parse_args
from bench._capacity_report import flood_table, out, report
from bench._e2e import run_dir
from bench._harness import BenchReport, Measurement, config_of, finish, stage
from bench._priority_flood import flood_workload, run_flood, verified, worst_lowest
from bench._stack import forge_gets, forge_simulator, fresh_ledger
from bench._tables import log as _log
from bench._tables import record_checks
from sluicegate.config.capacity import CapacityConfig, TenantCapacity


def _main(a) -> BenchReport:
    tmp = run_dir()
    drop = None
    rep = BenchReport("capacity_bench", config_of(a))
    limits = f"limits under test: global {a.global_limit}, tenant {a.tenant_limit}, per repository {a.key_limit}"
    m = rep.add(Measurement("capacity burst", f"{limits}; simulated runs drain (SimulatedRuns release their slots, "
                            "then a dispatch pass runs)", verified=False))
    try:
        url, backend, drop = fresh_ledger(a.postgres, tmp, "ledger")
        ledger.upgrade(url)
        engine = ledger.make_engine(url)
        cfg = CapacityConfig(global_active_runs=a.global_limit,
                             tenant_defaults=TenantCapacity(max_active_runs=a.tenant_limit),
                             concurrency_limit=a.key_limit, defer_retry_seconds=a.defer_retry, dispatch_batch=a.batch)
        items = burst(a)
        _log(f"capacity bench ({backend}){' (quick: verification, not speed)' if a.quick else ''}: {len(items)} "
             f"deliveries, {a.tenants} tenants, flood share {a.flood_share}, {limits}, "
             f"runs {a.run_ms[0]:.0f}-{a.run_ms[1]:.0f} ms, seed {a.seed}")
        with forge_simulator(FORGE_TOKEN, a.forge_thread) as forge_url:
            t = time.perf_counter()
            stage(f"capacity burst: creating {len(items)} pull requests")
            asyncio.run(create_pulls(forge_url, items))
            _log(f"  {len(items)} pull requests created on the forge simulator in {time.perf_counter() - t:.1f}s")
            before = forge_gets(forge_url)
            res, *parts = asyncio.run(drive(a, items, engine, forge_url, cfg))
            res.forge_reads = forge_gets(forge_url) - before
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
        with forge_simulator(FORGE_TOKEN, a.forge_thread) as forge_url:
            stage(f"priority flood: creating {len(items)} pull requests")
            asyncio.run(create_pulls(forge_url, items))
            for aging, label in ((a.aging, "aged"), (None, "strict")):
                url, backend, drop = fresh_ledger(a.postgres, tmp, label)
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
        flood_table(a, aged, strict, backend)
        (p, worst_aged), (_, worst_strict) = worst_lowest(aged), worst_lowest(strict)
        _log(f"worst p{p} wait: {worst_aged:.2f} s aged vs {worst_strict:.2f} s strict")
        m.figures.update(backend=backend, deliveries=len(items), lowest_priority=p, worst_wait_lowest_aged=worst_aged,
                         worst_wait_lowest_strict=worst_strict, aging_seconds=a.aging)
        m.verified = record_checks(m, verified(aged) + verified(strict), out)
    except Exception as exc:  # noqa: BLE001 - a broken bench fails its verification
        traceback.print_exc()
        m.error = f"{type(exc).__name__}: {exc}"
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return rep


def main(argv: list[str] | None = None) -> int:
    a = parse_args(__doc__, argv)
    return finish(a, lambda: _flood_main(a) if a.priority_flood else _main(a), "capacity_bench")


if __name__ == "__main__":
    sys.exit(main())
