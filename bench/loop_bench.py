"""Sluicegate agent-loop benchmark: per-step overhead vs. a bare workflow, and a worker restart mid-run.

    .venv/bin/python -m bench.loop_bench            # full run (~1.5-2 min on the 2-core dev box)
    .venv/bin/python -m bench.loop_bench --quick    # verification run: small sizes, checks correctness
    .venv/bin/python -m bench.loop_bench --help     # --rounds, --orders, --concurrency, --reviews, --delay, --json

One dev stack (own temp dir, free ports, telemetry off), started without its worker:

1. **overhead** -- the real ``AgentLoop`` workflow with the real worker wiring (``create_worker``,
   in this process) against in-process forge and model simulators, vs. ``bench/_bare_workflow.py``
   (5 no-op activities per order: 3 "model" + 2 "tool") and vs. ``bench/_bare_agent.py`` (the same
   5 activities making the same model and forge calls, no runtime), same dev server, interleaved
   rounds. Prints ms and CPU per model step for all three and the ratios loop / each.
2. **restart** -- the stack's worker process is started, the model simulator is made slow,
   K reviews are admitted through the webhook API, the worker is SIGKILLed while the second
   model calls are in flight and a new one started; prints the model simulator's calls and
   completions against the steps the runs recorded and Temporal's model-activity attempts.
3. **calls per PR** -- model calls per review with no crash, with the kill of measurement 2
   (mid-call), and with a kill that lands after every second answer was journaled (the stack's
   ledger is PostgreSQL for this; ``bench/_crash_calls.py``).

Exit status: 1 when a measurement errored or its verification failed, else 0 (a CHECK
verdict or a high ratio does not fail it). See bench/README.md. The parts: ``bench/_loop_run.py``
(the three in turn), ``_loop_overhead.py``, ``_loop_restart.py``, ``_crash_calls.py``,
``_loop_report.py`` (tables), ``_loop_rows.py`` (JSON rows).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import time
import traceback

from bench._common import BENCH_SCOPE
from bench._crash_calls import Batch
from bench._dup import postgres_database
from bench._e2e import run_dir
from bench._harness import BenchReport, config_of, finish, parser, stage
from bench._loop_report import console
from bench._loop_rows import add_rows
from bench._loop_run import RESTART_OVERRIDES, run_measurements
from sluicegate.devstack import DevStack, isolated_overrides

DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/postgres"


def _log(line: str) -> None:
    print(line, flush=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = parser(__doc__)
    p.add_argument("--rounds", type=int, default=None, help="overhead rounds per side (default 3; quick 1)")
    p.add_argument("--orders", type=int, default=None, help="orders per side per round (default 24; quick 2)")
    p.add_argument("--concurrency", type=int, default=8, help="orders in flight per side (default 8)")
    p.add_argument("--warmup", type=int, default=None, help="untimed orders per side first (default 8; quick 1)")
    p.add_argument("--reviews", type=int, default=None, help="reviews admitted for the restart (default 6; quick 1)")
    p.add_argument("--delay", type=float, default=None,
                   help="model simulator delay per call in the restart (default 1.5 s; quick 1 s)")
    p.add_argument("--timeout", type=float, default=90.0, help="seconds to wait for the restart's runs")
    p.add_argument("--no-overhead", action="store_true")
    p.add_argument("--no-restart", action="store_true")
    p.add_argument("--no-crash-calls", action="store_true", help="skip measurement 3 (calls per PR)")
    p.add_argument("--sims-in-process", action="store_true",
                   help="overhead: run the forge and model simulators as threads of the bench process (as before "
                        "2026-12-01 09:20 UTC: they share the workers' GIL) instead of the stack's simulator processes")
    p.add_argument("--postgres", default=os.environ.get("SLUICEGATE_BENCH_POSTGRES_URL", DEFAULT_PG),
                   help="admin URL; the stack's ledger is a throwaway database there (needed for the "
                        "kill-after-the-answer batch)")
    p.add_argument("--no-postgres", action="store_true", help="SQLite ledger; no kill-after-the-answer batch")
    a = p.parse_args(argv)
    a.rounds = a.rounds or (1 if a.quick else 3)
    a.orders = a.orders or (2 if a.quick else 24)
    a.warmup = a.warmup if a.warmup is not None else (1 if a.quick else 8)
    a.reviews = a.reviews or (1 if a.quick else 6)
    a.delay = a.delay or (1.0 if a.quick else 1.5)
    if min(a.rounds, a.orders, a.concurrency, a.reviews) < 1 or a.delay <= 0:
        p.error("--rounds/--orders/--concurrency/--reviews and --delay must be positive")
    return a


def _main(a) -> BenchReport:
    tmp = run_dir()
    started = time.perf_counter()
    _log(f"loop bench{' (quick: verification, not speed)' if a.quick else ''}: rounds={a.rounds} orders={a.orders} "
         f"concurrency={a.concurrency} warmup={a.warmup} reviews={a.reviews} delay={a.delay}s tmp={tmp}")
    env = {**isolated_overrides(tmp), "SLUICEGATE_TELEMETRY_EXPORTER": "none", **RESTART_OVERRIDES, **BENCH_SCOPE}
    database = None if a.no_postgres else postgres_database(a.postgres)
    if isinstance(database, str):
        _log(f"  {database}: the stack's ledger is SQLite")
    elif database is not None:
        env["SLUICEGATE_LEDGER_URL"] = database[0]
    postgres = isinstance(database, tuple)
    stack = DevStack(env, headless=True, with_worker=False, log_dir=tmp / "logs")
    rep = BenchReport("loop_bench", {**config_of(a), "ledger": "PostgreSQL" if postgres else "SQLite"})
    overhead = restart = None
    batches: list[Batch] = []
    errors: list[str] = []
    try:
        t = time.perf_counter()
        stage("loop bench: starting the dev stack")
        stack.start()
        _log(f"  dev stack up in {time.perf_counter() - t:.1f}s (no worker yet; logs in {stack.log_dir})")
        overhead, restart, batches, errors = asyncio.run(run_measurements(a, stack, tmp, postgres))
    except Exception as exc:  # noqa: BLE001
        traceback.print_exc()
        rep.errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        stack.stop()
        left = stack.leftover()
        if left:
            rep.errors.append(f"stack processes still running after stop: {left}")
        if postgres:
            database[1]()
    try:
        add_rows(a, rep, overhead, restart, batches, errors, stack.settings.capacity.concurrency_limit,
                      postgres)
    except Exception as exc:  # noqa: BLE001
        traceback.print_exc()
        rep.errors.append(f"report: {type(exc).__name__}: {exc}")
    finally:
        if a.keep:
            _log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    for e in errors + rep.errors:
        console.print(f"[bold red]ERROR[/] {e}")
    _log(f"total {time.perf_counter() - started:.0f}s")
    return rep


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    return finish(a, lambda: _main(a), "loop_bench")


if __name__ == "__main__":
    sys.exit(main())
