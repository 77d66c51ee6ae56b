"""Sluicegate intake benchmark: intake vs. its bare baseline, side by side, in one run.

    .venv/bin/python -m bench.intake_bench            # full run (~2-3 min on 2 cores)
    .venv/bin/python -m bench.intake_bench --quick    # verification run: small sizes, checks correctness
    .venv/bin/python -m bench.intake_bench --json     # one JSON document on stdout

Measures (see bench/README.md):
  1. duplicate deliveries rejected/s by intake vs. a bare INSERT ... ON CONFLICT DO NOTHING
     on the same database and engine (SQLite; PostgreSQL when reachable), target >= 0.8;
  2. admitted deliveries/s end to end (webhook API on the real dev stack, capacity limits
     lifted, no worker) vs. bare signal-with-start against the same dev server at the same
     concurrency: throughput ratio (target >= 0.9) and p95 ratio (target <= 1.2); and the same
     ratios against a bare front (FastAPI + signature + parse + signal-with-start, bench/_e2e_front.py).
Sides alternate within each round; the table shows medians of per-round figures.
Exit status: 0 when every measurement ran and verified (whatever the ratios), 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import time
import traceback
from pathlib import Path

from bench import _dup, _e2e
from bench._common import Comparison
from bench._harness import BenchReport, config_of, finish, parser, stage
from bench._intake_report import report

DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/postgres"
DUP_TARGET, E2E_TARGET, E2E_P95_TARGET = 0.8, 0.9, 1.2
DUP_CAPACITY = ("not involved: IntakeService without a capacity gate (a duplicate delivery is rejected "
                "before capacity is consulted)")


def _log(line: str) -> None:
    print(line, flush=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = parser(__doc__)
    p.add_argument("--rounds", type=int, default=None, help="interleaved rounds per comparison (default 3; quick 2)")
    p.add_argument("--dup-seconds", type=float, default=None,
                   help="seconds per side per round for the duplicate comparison (default 4; quick 0.3)")
    p.add_argument("--e2e-per-round", type=int, default=None,
                   help="deliveries (and bare starts) per side per round (default 500; quick 16)")
    p.add_argument("--concurrency", type=int, default=16, help="requests in flight end to end (default 16)")
    p.add_argument("--postgres-url", default=os.environ.get("SLUICEGATE_BENCH_POSTGRES_URL", DEFAULT_PG),
                   help="admin URL; a throwaway database is created and dropped (default %(default)s)")
    p.add_argument("--no-postgres", action="store_true", help="skip the PostgreSQL duplicate comparison")
    p.add_argument("--no-e2e", action="store_true", help="skip the end-to-end comparison (no dev stack)")
    p.add_argument("--dup-ledger-path", action="store_true",
                   help="duplicates without the in-process answers (intake/seen_deliveries.py): every one "
                        "parsed and read from the ledger")
    a = p.parse_args(argv)
    a.rounds = a.rounds or (2 if a.quick else 3)
    a.dup_seconds = a.dup_seconds or (0.3 if a.quick else 4.0)
    a.e2e_per_round = a.e2e_per_round or (16 if a.quick else 500)
    # A freshly started stack is slow for its first few hundred requests (both sides); warm both up.
    a.e2e_warmup = 4 if a.quick else max(a.concurrency * 2, a.e2e_per_round // 2)
    if min(a.rounds, a.e2e_per_round, a.concurrency) < 1 or a.dup_seconds <= 0:
        p.error("--rounds, --e2e-per-round, --concurrency and --dup-seconds must be positive")
    return a


def _dup_run(a, tmp: Path, postgres: bool) -> Comparison:
    name = f"duplicate rejects ({'PostgreSQL' if postgres else 'SQLite'}{', ledger path' if a.dup_ledger_path else ''})"
    if not postgres:
        return asyncio.run(_dup.measure(name, f"sqlite:///{tmp / 'dup-ledger.sqlite'}", a.rounds, a.dup_seconds, _log,
                                        a.dup_ledger_path))
    if a.no_postgres:
        return Comparison(name, DUP_TARGET, "rejects/s", skipped="--no-postgres")
    db = _dup.postgres_database(a.postgres_url)
    if isinstance(db, str):
        return Comparison(name, DUP_TARGET, "rejects/s", skipped=db)
    url, drop = db
    try:
        return asyncio.run(_dup.measure(name, url, a.rounds, a.dup_seconds, _log, a.dup_ledger_path))
    finally:
        drop()
        _log("  dropped the throwaway PostgreSQL database")


def _e2e_run(a, tmp: Path) -> tuple[Comparison, dict | None]:
    if a.no_e2e:
        return Comparison("end-to-end admissions", E2E_TARGET, "admits/s", skipped="--no-e2e"), None
    t = time.perf_counter()
    stage("end-to-end admissions: starting the dev stack")
    stack = _e2e.start_stack(tmp / "stack")
    _log(f"  dev stack up in {time.perf_counter() - t:.1f}s (logs in {stack.log_dir}); capacity: {_e2e.CAPACITY}")
    try:
        return asyncio.run(_e2e.measure(stack, a.rounds, a.e2e_per_round, a.e2e_warmup, a.concurrency, _log))
    finally:
        stack.stop()
        left = stack.leftover()
        if left:
            raise RuntimeError(f"stack processes still running after stop: {left}")


def _guard(name: str, target: float, capacity: str, fn, *args) -> tuple[Comparison, dict | None]:
    """Run one measurement; an exception becomes an errored row instead of ending the run."""
    try:
        out = fn(*args)
    except Exception as exc:  # noqa: BLE001 - reported in the table, the JSON and the exit status
        traceback.print_exc()
        out = Comparison(name, target, "", error=f"{type(exc).__name__}: {exc}")
    cmp, extra = out if isinstance(out, tuple) else (out, None)
    cmp.target, cmp.capacity = target, capacity
    return cmp, extra


def _run(a) -> BenchReport:
    tmp = Path(_e2e.run_dir())
    started = time.perf_counter()
    _log(f"intake bench{' (quick: verification, not speed)' if a.quick else ''}: rounds={a.rounds} "
         f"dup-seconds={a.dup_seconds} e2e-per-round={a.e2e_per_round} concurrency={a.concurrency} tmp={tmp}")
    rep = BenchReport("intake_bench", config_of(a))
    try:
        results = [_guard("duplicate rejects (SQLite)", DUP_TARGET, DUP_CAPACITY, _dup_run, a, tmp, False)[0],
                   _guard("duplicate rejects (PostgreSQL)", DUP_TARGET, DUP_CAPACITY, _dup_run, a, tmp, True)[0]]
        e2e, extra = _guard("end-to-end admissions", E2E_TARGET, _e2e.CAPACITY, _e2e_run, a, tmp)
        cpu, front = extra or (None, None)  # front: the same intake rounds vs. the bare front (bench/_e2e_front.py)
        e2e.p95_target = E2E_P95_TARGET
        results += [e2e] + ([front] if front else [])
        for c in results:
            rep.add(c.as_measurement())
        if cpu:
            rep.measurements[2].figures["cpu_ms_per_op"] = cpu
        report(results, cpu)
    finally:
        if a.keep:
            _log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    _log(f"total {time.perf_counter() - started:.0f}s")
    return rep


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    return finish(a, lambda: _run(a), "intake_bench")


if __name__ == "__main__":
    sys.exit(main())
