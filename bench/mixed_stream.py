"""Sluicegate mixed-stream benchmark: intake vs. one workflow per delivery, on one dev stack.

A realistic webhook stream goes through intake, then the same stream naively ("one
AgentLoop workflow per delivery"), side by side on one dev stack with a worker.

    .venv/bin/python -m bench.mixed_stream            # full run: 500 deliveries (~1.5 min on 2 cores)
    .venv/bin/python -m bench.mixed_stream --quick    # verification run: 20 deliveries
    .venv/bin/python -m bench.mixed_stream --deliveries 400 --new 0.5 --redeliver 0.4 --stale 0.1 --concurrency 16

A seeded stream of signed GitHub ``pull_request`` deliveries -- new work, exact
redeliveries, late deliveries for a head that has moved on -- goes to the real webhook
API while the worker runs what is admitted. Prints decisions per second by outcome,
checks that workflows started equal unique work items (ledger and Temporal), then runs
the same stream naively and compares model calls and comments posted (see bench/README.md).
Exit status: 1 when something errored or an invariant failed, else 0.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import time
import traceback

from bench._common import BENCH_SCOPE, NO_CAPACITY_LIMITS
from bench._e2e import run_dir
from bench._harness import BenchReport, finish, config_of, parser, stage
from bench._mixed import intake_phase
from bench._mixed_naive import naive_phase
from bench._mixed_checks import Check, intake_checks, naive_checks
from bench._mixed_report import CAPACITY, measurements, out, print_report
from bench._mixed_results import IntakeResult, NaiveResult
from bench._stream import Stream, build_stream
from bench._tables import log as _log
from sluicegate.devstack import DevStack, isolated_overrides


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = parser(__doc__)
    p.add_argument("--deliveries", type=int, default=None, help="deliveries in the stream (default 500; quick 20)")
    p.add_argument("--new", type=float, default=0.6, help="weight of new work items (default 0.6)")
    p.add_argument("--redeliver", type=float, default=0.3, help="weight of exact redeliveries (default 0.3)")
    p.add_argument("--stale", type=float, default=0.1, help="weight of stale-head deliveries (default 0.1)")
    p.add_argument("--concurrency", type=int, default=16, help="requests in flight (default 16)")
    p.add_argument("--seed", type=int, default=20261129, help="stream seed (default %(default)s)")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds to wait for each phase's runs to finish (default 300; quick 120)")
    p.add_argument("--no-naive", action="store_true", help="skip the naive baseline phase")
    a = p.parse_args(argv)
    a.deliveries = a.deliveries or (20 if a.quick else 500)
    a.timeout = a.timeout or (120.0 if a.quick else 300.0)
    if a.deliveries < 1 or a.concurrency < 1:
        p.error("--deliveries and --concurrency must be positive")
    if min(a.new, a.redeliver, a.stale) < 0 or a.new + a.redeliver + a.stale <= 0:
        p.error("--new/--redeliver/--stale must be >= 0 and not all 0")
    return a


async def _run(a, stack: DevStack, stream: Stream) -> tuple[IntakeResult, NaiveResult | None]:
    stage(f"mixed stream through intake: {len(stream.items)} deliveries, then the runs")
    intake = await intake_phase(stack, stream, a.concurrency, a.timeout, _log)
    naive = None
    if not a.no_naive:
        stage(f"naive: one AgentLoop workflow per delivery ({len(stream.items)})")
        naive = await naive_phase(stack, stream, a.concurrency, a.timeout, _log, intake.phase.executions)
    return intake, naive


def _main(a) -> BenchReport:
    tmp = run_dir()
    started = time.perf_counter()
    stream = build_stream(a.deliveries, {"new": a.new, "redeliver": a.redeliver, "stale": a.stale}, a.seed)
    _log(f"mixed-stream bench{' (quick: verification, not speed)' if a.quick else ''}: deliveries={a.deliveries} "
         f"mix new/redeliver/stale={a.new}/{a.redeliver}/{a.stale} concurrency={a.concurrency} seed={a.seed} "
         f"tmp={tmp}")
    _log(f"  capacity: {CAPACITY}")
    rep = BenchReport("mixed_stream", config_of(a))
    intake = naive = None
    ichecks: list[Check] = []
    nchecks: list[Check] = []
    error: str | None = None
    stack = DevStack({**isolated_overrides(tmp), "SLUICEGATE_TELEMETRY_EXPORTER": "none", **NO_CAPACITY_LIMITS,
                      **BENCH_SCOPE}, headless=True, log_dir=tmp / "logs")
    try:
        t = time.perf_counter()
        stage("mixed stream: starting the dev stack")
        stack.start()
        _log(f"  dev stack up in {time.perf_counter() - t:.1f}s (with worker; logs in {stack.log_dir})")
        intake, naive = asyncio.run(_run(a, stack, stream))
    except Exception as exc:  # noqa: BLE001 - reported and reflected in the exit status
        traceback.print_exc()
        error = f"{type(exc).__name__}: {exc}"
    finally:
        stack.stop()
        left = stack.leftover()
        if left:
            rep.errors.append(f"stack processes still running after stop: {left}")
    try:
        if intake is not None:
            ichecks = intake_checks(stream, intake)
        if naive is not None:
            nchecks = naive_checks(stream, naive)
        print_report(a, stream, intake, naive, ichecks + nchecks)
        measurements(a, rep, stream, intake, naive, ichecks, nchecks, error)
    except Exception as exc:  # noqa: BLE001
        traceback.print_exc()
        rep.errors.append(f"report: {type(exc).__name__}: {exc}")
    finally:
        if a.keep:
            _log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    failed = [c.name for c in ichecks + nchecks if c.fatal and not c.ok]
    if error:
        out.print(f"[bold red]ERROR[/] {error}")
        if intake is not None:  # the error came after the intake phase: not tied to a measurement row
            rep.errors.append(error)
    if failed:
        out.print(f"[bold red]FAIL[/] {len(failed)} invariant(s) failed: " + "; ".join(failed))
    if intake is not None and naive is not None and intake.phase.calls:
        _log(f"model calls: intake {intake.phase.calls}, naive {naive.phase.calls} "
             f"-> naive/intake = {naive.phase.calls / intake.phase.calls:.2f}")
    _log(f"total {time.perf_counter() - started:.0f}s")
    return rep


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    return finish(a, lambda: _main(a), "mixed_stream")


if __name__ == "__main__":
    sys.exit(main())
