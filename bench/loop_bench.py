"""Sluicegate agent-loop benchmark: per-step overhead vs. a bare workflow, and a worker restart mid-run.

    .venv/bin/python -m bench.loop_bench            # full run (~1.5-2 min on the 2-core dev box)
    .venv/bin/python -m bench.loop_bench --quick    # verification run: small sizes, checks correctness
    .venv/bin/python -m bench.loop_bench --help     # --rounds, --orders, --concurrency, --reviews, --delay, --json

One dev stack (own temp dir, free ports, telemetry off), started without its worker:

1. **overhead** -- the real ``AgentLoop`` workflow with the real worker wiring (``create_worker``,
   in this process) against in-process forge and model simulators, vs. ``bench/_bare_workflow.py``
   (5 no-op activities per order: 3 "model" + 2 "tool"), same dev server, interleaved rounds.
   Prints ms per model step for both and the ratio loop / bare.
2. **restart** -- the stack's worker process is started, the model simulator is made slow,
   K reviews are admitted through the webhook API, the worker is SIGKILLed while the second
   model calls are in flight and a new one started; prints the model simulator's calls and
   completions against the steps the runs recorded and Temporal's model-activity attempts.
3. **calls per PR** -- model calls per review with no crash, with the kill of measurement 2
   (mid-call), and with a kill that lands after every second answer was journaled (the stack's
   ledger is PostgreSQL for this; ``bench/_crash_calls.py``).

Exit status: 1 when a measurement errored or its verification failed, else 0 (a CHECK
verdict or a high ratio does not fail it). See bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import shutil
import sys
import time
import traceback
from pathlib import Path

from rich.console import Console
from rich.table import Table

from bench._crash_calls import Batch, measure_batches
from bench._dup import postgres_database
from bench._e2e import run_dir
from bench._loop import Overhead, Restart, measure_overhead, measure_restart
from bench._common import BENCH_SCOPE, median
from bench._harness import BenchReport, Measurement, config_of, finish, parser, stage
from sluicegate.devstack import DevStack, isolated_overrides

console = Console(highlight=False, width=None if sys.stdout.isatty() else 150)

# Runtime options snapshotted into every work order at admission (API process) -- shortened so a
# model call cut off by the SIGKILL is retried within seconds instead of after 60 s / 10 s.
DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/postgres"
OVERHEAD_CAPACITY = ("not involved: orders are started directly on the bench's in-process worker "
                     "(no intake, no capacity gate, and no admission check in the claim: no receipt backs them)")
RESTART_OVERRIDES = {
    "SLUICEGATE__ACTIVITIES__MODEL_START_TO_CLOSE_SECONDS": "5",
    "SLUICEGATE__ACTIVITIES__TOOL_START_TO_CLOSE_SECONDS": "5",
    "SLUICEGATE__ACTIVITIES__TOOL_HEARTBEAT_SECONDS": "3",
}


class _DropUnadmittedOutcome(logging.Filter):
    """The overhead side's orders bypass intake, so record_run_outcome finds no admission and warns
    once per order (expected, like the naive side of mixed_stream.py); keep the output readable."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "not recorded: no such admission" not in str(record.msg)


logging.getLogger("temporalio.activity").addFilter(_DropUnadmittedOutcome())


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


def report_overhead(o: Overhead) -> None:
    t = Table(title=f"Per-step overhead: AgentLoop vs. bare workflow (5 no-op activities per order), "
                    f"{o.orders} orders per round at concurrency {o.concurrency}, {len(o.loop)} interleaved rounds")
    for col in ("side", "wall ms / model step", "p50 ms / step", "p95 ms / step", "ms / activity",
                "CPU ms/step temporal", "CPU ms/step bench proc"):
        t.add_column(col, justify="left" if col == "side" else "right")
    for side, label in (("loop", "AgentLoop (real worker, sims)"), ("bare", "bare workflow")):
        acts = o.events.get(side, {}).get("activities") or float("nan")  # per model step, counted in history
        per = o.per_step_ms(side)
        t.add_row(label, f"{per:.1f}", f"{o.latency_per_step_ms(side, 50):.1f}",
                  f"{o.latency_per_step_ms(side, 95):.1f}", f"{per / acts:.1f}",
                  f"{o.cpu_ms(side, 'temporal'):.1f}", f"{o.cpu_ms(side, o.bench_proc):.1f}")
    ratios = o.ratios
    t.add_row("[bold]ratio loop / bare[/]", f"[bold]{median(ratios):.2f}[/]",
              f"{o.latency_per_step_ms('loop', 50) / o.latency_per_step_ms('bare', 50):.2f}",
              f"{o.latency_per_step_ms('loop', 95) / o.latency_per_step_ms('bare', 95):.2f}", "",
              f"{o.cpu_ms('loop', 'temporal') / o.cpu_ms('bare', 'temporal'):.2f}",
              f"{o.cpu_ms('loop', o.bench_proc) / o.cpu_ms('bare', o.bench_proc):.2f}")
    console.print(t)
    _log("  per-round ratios (wall ms/step loop / bare): " + ", ".join(f"{r:.2f}" for r in ratios))
    _log(f"  extra wall time per model step: {o.per_step_ms('loop') - o.per_step_ms('bare'):.1f} ms")
    _log("  simulators: " + ("threads of the bench process (in its CPU figure)" if o.sims_in_process else
                             "the stack's processes, CPU ms per loop step: " + ", ".join(
                                 f"{k} {o.cpu_ms('loop', k):.1f}" for k in ("forge simulator", "model simulator"))))
    for side in ("loop", "bare"):  # counted in Temporal history, last round's orders
        ev = o.events.get(side, {})
        _log(f"  {side} history per model step: " + ", ".join(f"{k} {v:.2f}" for k, v in ev.items()))
    for c in o.checks:
        _log(f"  check {c}")


def report_restart(r: Restart) -> list[tuple[str, bool, str]]:
    t = Table(title=f"Worker SIGKILL mid-run: {r.reviews} reviews via the webhook API, model simulator "
                    f"+{r.delay}s per call")
    for col in ("figure", "value"):
        t.add_column(col, justify="left" if col == "figure" else "right")
    extra_calls = r.calls - r.steps
    received = r.completed - r.late
    rows = [
        ("runs (status)", ", ".join(f"{k} {v}" for k, v in sorted(r.statuses.items()))),
        ("steps recorded by the runs (work_versions.result.steps)", r.steps),
        ("model activities completed in Temporal history", r.history_completed),
        ("model simulator: calls (arrived)", r.calls),
        ("model simulator: completed (answered 200)", r.completed),
        ("  at the kill: calls / completed", f"{r.at_kill.get('calls')} / {r.at_kill.get('completed')}"),
        ("  cut off by the kill (in flight: calls - completed at the kill)", r.cut_off),
        ("  completed after the kill, to no worker (late)", r.late),
        ("model activity retries in Temporal history (sum of attempt - 1)", r.history_retries),
        ("[bold]extra model calls = calls - steps[/]", extra_calls),
        ("comments posted on the forge", r.comments),
        ("kill at / new worker up after / all runs done at (s)",
         f"{r.kill_after:.1f} / {r.restart_seconds:.1f} / {r.finish_seconds:.1f}"),
    ]
    for name, value in rows:
        t.add_row(name, str(value))
    console.print(t)
    verdicts = [
        ("no completed model call was repeated: completed == steps",
         received == r.steps,
         f"{r.completed} completed vs {r.steps} steps" + (f" ({r.late} late completions discounted)" if r.late else "")),
        ("every extra call is the retry of a call cut off by the kill: calls - steps == cut off == retries",
         extra_calls == r.cut_off == r.history_retries,
         f"{extra_calls} extra, {r.cut_off} cut off, {r.history_retries} retries in history"),
        ("history agrees with the ledger: model activities completed == steps", r.history_completed == r.steps,
         f"{r.history_completed} vs {r.steps}"),
        ("one comment per review", r.comments == r.reviews, f"{r.comments} comments, {r.reviews} reviews"),
    ]
    v = Table(title="Restart verdicts")
    for col in ("check", "detail", "verdict"):
        v.add_column(col)
    for name, ok, detail in verdicts:
        v.add_row(name, detail, "[green]PASS[/]" if ok else "[yellow]CHECK[/]")
    console.print(v)
    return verdicts


def report_calls_per_pr(batches: list[Batch], restart: Restart | None, postgres: bool) -> list[tuple[str, bool]]:
    t = Table(title="Model calls per PR (3 model steps per review), with and without a worker SIGKILL")
    for col in ("scenario", "reviews", "model calls", "calls per PR", "extra = calls - steps", "retried attempts",
                "comments", "verdict"):
        t.add_column(col, justify="left" if col in ("scenario", "verdict") else "right")
    rows = [(b.scenario, b.reviews, b.calls, b.steps, b.retries, b.comments) for b in batches[:1]]
    if restart is not None:
        rows.append(("kill mid-call (measurement 2: the answer never reached a worker)", restart.reviews,
                     restart.calls, restart.steps, restart.history_retries, restart.comments))
    rows += [(b.scenario, b.reviews, b.calls, b.steps, b.retries, b.comments) for b in batches[1:]]
    verdicts = []
    for name, reviews, calls, steps, retries, comments in rows:
        mid = name.startswith("kill mid-call")
        ok = calls == steps or (mid and restart is not None and calls - steps == restart.cut_off)
        verdicts.append((name, ok))
        t.add_row(name, str(reviews), str(calls), f"{calls / reviews:.2f}", str(calls - steps), str(retries),
                  str(comments), ("[green]PASS[/]" if ok else "[yellow]CHECK[/]") + (
                      " (extra == cut off)" if mid else " (calls == steps)"))
    console.print(t)
    if not postgres:
        _log("  kill after the answer: not measured (needs the PostgreSQL ledger; --no-postgres or unreachable)")
    return verdicts


async def _run(a, stack: DevStack, tmp: Path, postgres: bool
               ) -> tuple[Overhead | None, Restart | None, list[Batch], list[str]]:
    errors: list[str] = []
    overhead = restart = None
    batches: list[Batch] = []
    if not a.no_overhead:
        try:
            stage("per-step overhead: AgentLoop vs. bare workflow")
            overhead = await measure_overhead(stack, tmp, a.rounds, a.orders, a.concurrency, a.warmup, _log,
                                              a.sims_in_process)
        except Exception as exc:  # noqa: BLE001 - reported, exit status 1
            traceback.print_exc()
            errors.append(f"overhead: {type(exc).__name__}: {exc}")
    if not a.no_restart:
        try:
            t = time.perf_counter()
            stage("worker SIGKILL mid-run: starting the worker")
            await asyncio.to_thread(stack.start_worker)
            _log(f"  worker process started in {time.perf_counter() - t:.1f}s")
            stage(f"worker SIGKILL mid-run: {a.reviews} reviews")
            restart = await measure_restart(stack, a.reviews, a.delay, a.timeout, _log)
        except Exception as exc:  # noqa: BLE001
            traceback.print_exc()
            errors.append(f"restart: {type(exc).__name__}: {exc}")
    if not a.no_crash_calls:
        try:
            if stack.processes.get("worker") is None or not stack.processes["worker"].alive():
                await asyncio.to_thread(stack.start_worker)
            stage(f"model calls per PR: {a.reviews} reviews per scenario")
            batches = await measure_batches(stack, a.reviews, a.delay, a.timeout, _log, after_answer=postgres)
        except Exception as exc:  # noqa: BLE001
            traceback.print_exc()
            errors.append(f"calls per PR: {type(exc).__name__}: {exc}")
    return overhead, restart, batches, errors


def _measurements(a, rep: BenchReport, overhead: Overhead | None, restart: Restart | None, batches: list[Batch],
                  errors: list[str], repo_limit: int | None, postgres: bool) -> None:
    """Report every measurement (human tables, then one JSON row each) and what verified it."""
    failed = {e.split(":", 1)[0] for e in errors}
    if not a.no_overhead:
        m = rep.add(Measurement("per-step overhead: AgentLoop vs. bare workflow", OVERHEAD_CAPACITY,
                                verified=overhead is not None, error=next((e for e in errors if e.startswith(
                                    "overhead")), None)))
        if overhead is not None:
            report_overhead(overhead)
            m.checks = list(overhead.checks)
            m.figures = {side: {"ms_per_model_step": overhead.per_step_ms(side),
                                "p50_ms_per_step": overhead.latency_per_step_ms(side, 50),
                                "p95_ms_per_step": overhead.latency_per_step_ms(side, 95)} for side in ("loop", "bare")}
            m.figures.update(orders=overhead.orders, concurrency=overhead.concurrency, rounds=len(overhead.loop),
                             history_events_per_model_step=overhead.events,
                             sims_in_process=overhead.sims_in_process,
                             cpu_ms_per_model_step={side: {k: overhead.cpu_ms(side, k) for k in overhead.cpu[side]}
                                                    for side in ("loop", "bare")})
            m.ratios = {"step": median(overhead.ratios), "step_target_max": 1.2, "step_per_round": overhead.ratios,
                        "p95": overhead.latency_per_step_ms("loop", 95) / overhead.latency_per_step_ms("bare", 95)}
    limits = f"dev config limits (per repository {repo_limit})"
    if not a.no_restart:
        m = rep.add(Measurement("worker SIGKILL mid-run", f"{limits}, the stack's worker drains; {a.reviews} reviews "
                                f"per repository", verified="restart" not in failed and restart is not None,
                                error=next((e for e in errors if e.startswith("restart")), None)))
        if restart is not None:
            verdicts = report_restart(restart)
            m.verified = verdicts[0][1]
            m.checks = [f"{'PASS' if ok else 'CHECK'} {name}: {detail}" for name, ok, detail in verdicts]
            m.figures = {"calls": restart.calls, "completed": restart.completed, "steps": restart.steps,
                         "cut_off": restart.cut_off, "late": restart.late, "retries": restart.history_retries,
                         "comments": restart.comments, "statuses": restart.statuses}
    if not a.no_crash_calls:
        m = rep.add(Measurement("model calls per PR", f"{limits}, the stack's worker drains; {a.reviews} reviews "
                                f"per repository", verified="calls per PR" not in failed and bool(batches),
                                error=next((e for e in errors if e.startswith("calls per PR")), None)))
        if batches:
            verdicts = report_calls_per_pr(batches, restart, postgres)
            # hard: calls == steps without a crash and with a kill after the answer; mid-call is informational
            m.verified = m.verified and all(ok for name, ok in verdicts if not name.startswith("kill mid-call"))
            m.checks = [f"{'PASS' if ok else 'CHECK'} {name}" for name, ok in verdicts]
            m.figures = {b.scenario: {"reviews": b.reviews, "calls": b.calls, "calls_per_pr": b.per_pr,
                                      "steps": b.steps, "retries": b.retries, "comments": b.comments} for b in batches}


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
        overhead, restart, batches, errors = asyncio.run(_run(a, stack, tmp, postgres))
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
        _measurements(a, rep, overhead, restart, batches, errors, stack.settings.capacity.concurrency_limit,
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
