"""The JSON rows of ``bench/loop_bench.py``: one :class:`~bench._harness.Measurement` per measurement,
with its figures, ratios and what verified it (the human tables are printed on the way)."""

from __future__ import annotations

from bench._common import median
from bench._crash_calls import Batch
from bench._harness import BenchReport, Measurement
from bench._loop import SIDES, Overhead
from bench._loop_report import report_calls_per_pr, report_overhead, report_restart
from bench._loop_restart import Restart

OVERHEAD_CAPACITY = ("not involved: orders are started directly on the bench's in-process worker "
                     "(no intake, no capacity gate, and no admission check in the claim: no receipt backs them)")


def add_rows(a, rep: BenchReport, overhead: Overhead | None, restart: Restart | None, batches: list[Batch],
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
                                "p95_ms_per_step": overhead.latency_per_step_ms(side, 95)} for side in SIDES}
            m.figures.update(orders=overhead.orders, concurrency=overhead.concurrency, rounds=len(overhead.loop),
                             history_events_per_model_step=overhead.events,
                             sims_in_process=overhead.sims_in_process,
                             cpu_ms_per_model_step={side: {k: overhead.cpu_ms(side, k) for k in overhead.cpu[side]}
                                                    for side in SIDES})
            m.ratios = overhead_ratios(overhead)
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


def overhead_ratios(o: Overhead) -> dict:
    """Loop / bare no-op (``step``, kept as it always was) and loop / bare agent (``step_vs_bare_agent``):
    wall (median of the per-round ratios), p95, and CPU per model step of the bench process (both workers)
    and of Temporal; every scalar with the issue's target, 1.2, beside it."""
    out: dict = {}
    for base, prefix in (("bare", "step"), ("bare_agent", "step_vs_bare_agent")):
        cpu = prefix.replace("step", "cpu_bench_proc", 1)
        temporal = prefix.replace("step", "cpu_temporal", 1)
        out.update({prefix: median(o.ratios_vs(base)), f"{prefix}_target_max": 1.2,
                    f"{prefix}_per_round": o.ratios_vs(base),
                    prefix.replace("step", "p95", 1): o.latency_per_step_ms("loop", 95) / o.latency_per_step_ms(base, 95),
                    cpu: o.cpu_ratio(base, o.bench_proc), f"{cpu}_target_max": 1.2,
                    temporal: o.cpu_ratio(base, "temporal"), f"{temporal}_target_max": 1.2})
    return out
