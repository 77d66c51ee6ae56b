"""Scale-out curve on PostgreSQL: deliveries/s and p95 at 1, 2 and 4 API processes with 1-2 workers.

    .venv/bin/python -m bench.scale_bench            # 10,000 deliveries per step, 200 PRs, 64 in flight
    .venv/bin/python -m bench.scale_bench --quick    # verification: 100 deliveries per step, 6 PRs, 1x1 and 2x2 (~50 s)
    .venv/bin/python -m bench.scale_bench --deliveries 2000 --pulls 40   # a moderate run

One dev stack (Temporal dev server, simulators) with its ledger on a private PostgreSQL database
(created on ``--postgres-url``, dropped at the end), capacity limits lifted. Steps, in order, each
adding processes to the previous one: 1 API + 1 worker, 2 APIs + 1 worker, 4 APIs + 1 worker,
4 APIs + 2 workers (``--steps``). Every API is ``python -m webhook_api`` on its own loopback port,
all on the one ledger and Temporal; the client sends a duplicate storm (``drills._stream``: one
original per PR, the rest redeliveries and same-version duplicates, shuffled) round-robin over
the APIs, ``--in-flight`` at once, one connection per delivery. The workers drain what is admitted
(one review per unique version, model and forge simulators); a step waits for its runs to finish
before the next starts. Bounded: ``--step-timeout`` seconds of sending per step (what is not sent
by then is counted as not sent and fails the verification), loopback only.

Per step: deliveries/s over the send window, p50/p95, CPU seconds per process kind over the step
and the machine's share used (of ``os.cpu_count()`` cores). Verification (exit 1): every delivery
sent and answered below 300; exactly one accept per unique version; every version finished ``done``.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from bench import _e2e
from bench._common import BENCH_SCOPE, NO_CAPACITY_LIMITS
from bench._dup import postgres_database
from bench._harness import BenchReport, Measurement, config_of, finish, parser, stage
from bench._scale import CAPACITY, Processes, step
from sluicegate.devstack import DevStack, StackHttp, isolated_overrides

DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/postgres"


def _log(line: str) -> None:
    print(line, flush=True)


def parse_args(argv: list[str] | None = None):
    p = parser(__doc__)
    p.add_argument("--deliveries", type=int, default=None, help="deliveries per step (default 10000; quick 100)")
    p.add_argument("--pulls", type=int, default=None, help="pull requests per step (default 200; quick 6)")
    p.add_argument("--in-flight", type=int, default=None, help="requests in flight (default 64; quick 16)")
    p.add_argument("--steps", default=None, help="APIxWORKERS,... (default 1x1,2x1,4x1,4x2; quick 1x1,2x2)")
    p.add_argument("--step-timeout", type=float, default=600.0, help="seconds of sending per step, at most")
    p.add_argument("--postgres-url", default=os.environ.get("SLUICEGATE_BENCH_POSTGRES_URL", DEFAULT_PG),
                   help="admin URL; a private database is created and dropped (default %(default)s)")
    p.add_argument("--seed", type=int, default=11)
    a = p.parse_args(argv)
    a.deliveries = a.deliveries or (100 if a.quick else 10000)
    a.pulls = a.pulls or (6 if a.quick else 200)
    a.in_flight = a.in_flight or (16 if a.quick else 64)
    a.steps = a.steps or ("1x1,2x2" if a.quick else "1x1,2x1,4x1,4x2")
    try:
        a.plan = [tuple(int(x) for x in s.split("x")) for s in a.steps.split(",")]
    except ValueError:
        p.error("--steps is APIxWORKERS,... e.g. 1x1,2x1")
    if any(not (1 <= n <= 4 and 1 <= w <= 2) for n, w in a.plan) or not 0 < a.pulls <= a.deliveries:
        p.error("steps: 1-4 APIs, 1-2 workers; need 0 < --pulls <= --deliveries")
    return a


def _run(a) -> BenchReport:
    rep = BenchReport("scale_bench", config_of(a))
    db = postgres_database(a.postgres_url)
    if isinstance(db, str):
        rep.add(Measurement("scale-out", CAPACITY, skipped=db))
        _log(f"SKIPPED: {db}")
        return rep
    url, drop = db
    tmp = Path(_e2e.run_dir())
    env = {**isolated_overrides(tmp), "SLUICEGATE_LEDGER_URL": url, "SLUICEGATE_TELEMETRY_EXPORTER": "none",
           **BENCH_SCOPE, **NO_CAPACITY_LIMITS}
    stack = DevStack(env, headless=True, with_worker=False, log_dir=tmp / "logs")
    _log(f"scale bench{' (quick: verification, not speed)' if a.quick else ''}: PostgreSQL ledger (private database), "
         f"{a.deliveries} deliveries for {a.pulls} PRs per step, {a.in_flight} in flight, steps {a.steps}; tmp={tmp}")
    try:
        stage("scale bench: starting the dev stack")
        stack.start()
        procs, web = Processes(stack), StackHttp(stack)
        for index, (n_api, n_workers) in enumerate(a.plan):
            rep.add(step(a, stack, procs, web, n_api, n_workers, index))
        base = rep.measurements[0].figures["deliveries_per_s"] if rep.measurements else 0
        for m in rep.measurements:
            m.ratios = {"throughput_vs_first_step": m.figures["deliveries_per_s"] / base if base else float("nan")}
        _log("curve (deliveries/s relative to the first step): " + ", ".join(
            f"{m.name.split(': ')[1]} {m.ratios['throughput_vs_first_step']:.2f}" for m in rep.measurements))
    finally:
        stack.stop()
        if stack.leftover():
            rep.errors.append(f"processes still running after stop: {stack.leftover()}")
        drop()
        _log("  dropped the private PostgreSQL database")
        if a.keep:
            _log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return rep


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    return finish(a, lambda: _run(a), "scale_bench")


if __name__ == "__main__":
    sys.exit(main())
