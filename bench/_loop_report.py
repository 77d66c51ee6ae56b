"""The human tables of ``bench/loop_bench.py``: per-step overhead, the restart, model calls per PR.

``report_restart`` and ``report_calls_per_pr`` also return their verdicts (``bench/_loop_rows.py``
puts them in the JSON rows).
"""

from __future__ import annotations

import sys

from rich.console import Console
from rich.table import Table

from bench._common import median
from bench._crash_calls import Batch
from bench._loop import BASELINES, SIDES, Overhead
from bench._loop_restart import Restart

console = Console(highlight=False, width=None if sys.stdout.isatty() else 150)


def _log(line: str) -> None:
    print(line, flush=True)


def report_overhead(o: Overhead) -> None:
    t = Table(title=f"Per-step overhead: AgentLoop vs. bare no-op workflow (5 no-op activities per order) and bare "
                    f"agent (the same 5 activities making the model and forge calls), {o.orders} orders per round at "
                    f"concurrency {o.concurrency}, {len(o.loop)} interleaved rounds")
    for col in ("side", "wall ms / model step", "p50 ms / step", "p95 ms / step", "ms / activity",
                "CPU ms/step temporal", "CPU ms/step bench proc"):
        t.add_column(col, justify="left" if col == "side" else "right")
    labels = {"loop": "AgentLoop (real worker, sims)", "bare": "bare no-op workflow",
              "bare_agent": "bare agent (model + forge calls)"}
    for side in SIDES:
        acts = o.events.get(side, {}).get("activities") or float("nan")  # per model step, counted in history
        per = o.per_step_ms(side)
        t.add_row(labels[side], f"{per:.1f}", f"{o.latency_per_step_ms(side, 50):.1f}",
                  f"{o.latency_per_step_ms(side, 95):.1f}", f"{per / acts:.1f}",
                  f"{o.cpu_ms(side, 'temporal'):.1f}", f"{o.cpu_ms(side, o.bench_proc):.1f}")
    for base, name in BASELINES.items():
        t.add_row(f"[bold]ratio loop / {name}[/] (target <= 1.2)", f"[bold]{median(o.ratios_vs(base)):.2f}[/]",
                  f"{o.latency_per_step_ms('loop', 50) / o.latency_per_step_ms(base, 50):.2f}",
                  f"{o.latency_per_step_ms('loop', 95) / o.latency_per_step_ms(base, 95):.2f}", "",
                  f"{o.cpu_ratio(base, 'temporal'):.2f}", f"{o.cpu_ratio(base, o.bench_proc):.2f}")
    console.print(t)
    for base, name in BASELINES.items():
        _log(f"  per-round ratios (wall ms/step loop / {name}): " + ", ".join(f"{r:.2f}" for r in o.ratios_vs(base))
             + f"; extra wall per model step {o.per_step_ms('loop') - o.per_step_ms(base):.1f} ms, extra bench-process "
             f"CPU {o.cpu_ms('loop', o.bench_proc) - o.cpu_ms(base, o.bench_proc):.1f} ms")
    if not o.sims_in_process:
        for side in ("loop", "bare_agent"):
            _log(f"  simulator processes, CPU ms per {labels[side]} step: " + ", ".join(
                f"{k} {o.cpu_ms(side, k):.1f}" for k in ("forge simulator", "model simulator")))
    else:
        _log("  simulators: threads of the bench process (in its CPU figure)")
    for side in SIDES:  # counted in Temporal history, last round's orders
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
