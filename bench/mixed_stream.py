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
import math
import shutil
import sys
import time
import traceback
from collections import Counter, defaultdict
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table

from activities.keys import marker_for, operation_key
from bench._common import BENCH_SCOPE, NO_CAPACITY_LIMITS
from bench._e2e import run_dir
from bench._harness import BenchReport, Measurement, config_of, finish, parser, stage
from bench._mixed import (
    CATEGORIES, IntakeResult, NaiveResult, expected_workflow_ids, intake_phase, latency_ms, naive_phase,
)
from bench._stream import EXPECTED, KINDS, Stream, build_stream
from sluicegate.devstack import DevStack, isolated_overrides
from workflows.review_task import POST_COMMENT

console = Console(highlight=False, width=None if sys.stdout.isatty() else 150)


def _log(line: str) -> None:
    print(line, flush=True)


@dataclass
class Check:
    name: str
    ok: bool
    detail: str = ""
    fatal: bool = True
    """A failed fatal check (an invariant) makes the exit status 1; others are warnings."""


CAPACITY = ("limits lifted (NO_CAPACITY_LIMITS), the stack's worker drains: this bench measures dedupe and "
            "supersede against the naive baseline; capacity_bench measures the limits")
"""Capacity limits would defer part of the burst and replace queued versions while they wait."""

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


# -- checks -------------------------------------------------------------------------------

def _few(items, n: int = 4) -> str:
    items = sorted(map(str, items))
    return ", ".join(items[:n]) + (f" (+{len(items) - n} more)" if len(items) > n else "")


def intake_checks(stream: Stream, r: IntakeResult) -> list[Check]:
    checks: list[Check] = []
    errors = [f"#{i} {a.label}" for i, a in enumerate(r.answers) if a.error is not None or a.status is None
              or a.status >= 500]
    checks.append(Check("every delivery answered (no transport error, no 5xx)", not errors,
                        f"{len(errors)} errored: {_few(errors)}" if errors else f"{len(r.answers)} answered"))

    # Per delivery id: the original's expected answer once, duplicate-delivery for every other send
    # (which send gets which may swap when a redelivery races its original).
    by_id: dict[str, list] = defaultdict(list)
    for it, a in zip(stream.items, r.answers, strict=True):
        by_id[it.delivery_id].append((it, a))
    wrong = []
    for sends in by_id.values():
        original = next(it for it, _ in sends if it.origin is None)
        want = Counter([EXPECTED[original.kind]] + [EXPECTED["redeliver"]] * (len(sends) - 1))
        got = Counter((a.outcome, a.reason) for _, a in sends)
        if want != got:
            wrong.append(f"{original.kind} #{original.index} {original.work_key}@{original.sha[:8]}: "
                         f"got {dict(got)}")
    checks.append(Check("every delivery decided as its kind expects", not wrong,
                        f"{len(wrong)} delivery ids off: {_few(wrong, 3)}" if wrong
                        else f"{len(by_id)} delivery ids", fatal=False))

    admitted = {(v.work_key, v.input_version) for v in r.versions}
    new = stream.new_items
    checks.append(Check("work versions admitted (ledger) == unique new (PR, head) items in the stream",
                        admitted == new,
                        f"{len(admitted)} admitted vs {len(new)} unique new items"
                        + (f"; only admitted: {_few(admitted - new)}" if admitted - new else "")
                        + (f"; never admitted: {_few(new - admitted)}" if new - admitted else "")))

    keys = {v.work_key for v in r.versions}
    want_ids = expected_workflow_ids(r.versions)
    checks.append(Check("AgentLoop workflows (Temporal) == distinct work keys admitted (ledger)",
                        r.workflow_ids == want_ids,
                        f"{len(r.workflow_ids)} workflow ids vs {len(keys)} work keys"
                        + (f"; unexpected: {_few(r.workflow_ids - want_ids)}" if r.workflow_ids - want_ids else "")
                        + (f"; missing: {_few(want_ids - r.workflow_ids)}" if want_ids - r.workflow_ids else "")))

    runs = {(v.workflow_id, v.run_id) for v in r.versions}
    per_id = Counter(w for w, _ in r.phase.executions)
    checks.append(Check("AgentLoop executions (Temporal) == runs recorded on work versions (ledger)",
                        r.phase.executions == runs,
                        f"{len(r.phase.executions)} executions vs {len(runs)} recorded; "
                        f"{sum(n > 1 for n in per_id.values())} work keys ran in more than one execution "
                        f"(a version admitted after the previous run had finished)"))

    by_work = {k for k, n in r.phase.model.get("by_work", {}).items() if n}
    allowed = {f"{k}@{v}" for k, v in admitted}
    checks.append(Check("no model call for a rejected delivery (model calls only for admitted versions)",
                        by_work <= allowed,
                        f"{len(by_work)} (work key, version) pairs called the model, all admitted"
                        if by_work <= allowed else f"calls for never-admitted versions: {_few(by_work - allowed)}"))
    steps = sum((v.result or {}).get("steps", 0) for v in r.versions)
    checks.append(Check("model calls == steps recorded by admitted runs", r.phase.calls == steps,
                        f"{r.phase.calls} calls, {steps} steps"))

    per_op: Counter = Counter()
    markers = {marker_for(operation_key(k, POST_COMMENT, v)): (k, v) for k, v in admitted}
    stray = 0
    for c in r.phase.comments:
        body = c.get("body") or ""
        hit = next((kv for m, kv in markers.items() if m in body), None)
        per_op[hit] += hit is not None
        stray += hit is None
    status = {(v.work_key, v.input_version): v.status for v in r.versions}
    bad = [f"{k}@{ver[:8]}={status[(k, ver)]}:{per_op[(k, ver)]}" for k, ver in admitted
           if per_op[(k, ver)] > 1 or (status[(k, ver)] == "done" and per_op[(k, ver)] != 1)]
    checks.append(Check("one comment per done version, at most one per superseded one, none stray",
                        not bad and not stray, f"{len(r.phase.comments)} comments, {stray} stray"
                        + (f"; off: {_few(bad)}" if bad else ""), fatal=False))
    return checks


def naive_checks(stream: Stream, n: NaiveResult) -> list[Check]:
    total = len(stream.items)
    checks = [Check("naive: every workflow started and finished", not n.errors and n.starts == total,
                    f"{n.starts}/{total} started, {sum(n.statuses.values())} orders finished"
                    + (f"; errors: {_few(n.errors, 2)}" if n.errors else "")),
              Check("naive: AgentLoop executions (Temporal) == deliveries", len(n.phase.executions) == total,
                    f"{len(n.phase.executions)} executions for {total} deliveries"),
              Check("naive: model calls == steps recorded by the runs", n.phase.calls == n.steps,
                    f"{n.phase.calls} calls, {n.steps} steps", fatal=False)]
    return checks


# -- report -------------------------------------------------------------------------------

def _fmt(x: float, spec: str = ",.1f") -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def report(a, stream: Stream, intake: IntakeResult | None, naive: NaiveResult | None, checks: list[Check]) -> None:
    kinds = Counter(i.kind for i in stream.items)
    hows = Counter(i.how for i in stream.items)
    multi = Counter(Counter(i.work_key for i in stream.items if i.kind == "new").values())
    _log(f"stream: seed {stream.seed}, {len(stream.items)} deliveries, "
         + ", ".join(f"{k} {kinds[k]} ({kinds[k] / len(stream.items):.0%})" for k in KINDS)
         + f"; by how: {dict(sorted(hows.items()))}")
    _log(f"        {len(stream.pulls)} pull requests over {len({(p.owner, p.repo) for p in stream.pulls})} "
         f"repositories, {len(stream.new_items)} unique (PR, head) work items; versions per work key: "
         + ", ".join(f"{v}x{n}" for v, n in sorted(multi.items())))

    if intake is not None:
        want = Counter("accept" if i.kind == "new" else
                       {"redeliver": "reject:duplicate-delivery", "stale": "reject:stale-version"}[i.kind]
                       for i in stream.items)
        got = Counter(x.category for x in intake.answers)
        wall = intake.send_seconds
        t = Table(title=f"Intake decisions: {len(intake.answers)} deliveries at concurrency {a.concurrency}, "
                        f"worker running, sent in {wall:.2f}s")
        for col in ("outcome", "expected", "got", "share", "decisions/s", "p50 ms", "p95 ms"):
            t.add_column(col, justify="left" if col == "outcome" else "right")
        for cat in CATEGORIES:
            t.add_row(cat, str(want[cat]), str(got[cat]), f"{got[cat] / len(intake.answers):.0%}",
                      _fmt(got[cat] / wall), _fmt(latency_ms(intake.answers, cat, 50)),
                      _fmt(latency_ms(intake.answers, cat, 95)))
        t.add_row("[bold]overall[/]", str(len(stream.items)), str(len(intake.answers)), "100%",
                  f"[bold]{_fmt(len(intake.answers) / wall)}[/]", _fmt(latency_ms(intake.answers, None, 50)),
                  _fmt(latency_ms(intake.answers, None, 95)))
        console.print(t)
        others = Counter(x.label for x in intake.answers if x.category == "other")
        if others:
            _log("  other answers: " + ", ".join(f"{k} x{v}" for k, v in others.most_common(8)))
        _log("  ledger receipts (source github): " + ", ".join(f"{k} {v}" for k, v in sorted(intake.receipts.items())))
        _log(f"  work versions: {dict(Counter(v.status for v in intake.versions))}")

    c = Table(title="Invariants")
    for col in ("check", "detail", "verdict"):
        c.add_column(col)
    for ch in checks:
        verdict = "[green]PASS[/]" if ch.ok else ("[bold red]FAIL[/]" if ch.fatal else "[yellow]WARN[/]")
        c.add_row(ch.name, ch.detail, verdict)
    console.print(c)

    if intake is not None:
        s = Table(title="Intake vs. naive (one AgentLoop workflow per delivery), same stream, same stack")
        for col in ("", "intake", "naive", "naive / intake"):
            s.add_column(col, justify="left" if not col else "right")
        ip, np_ = intake.phase, naive.phase if naive else None

        def row(name: str, iv: float, nv: float | None, spec: str = ",.0f", ratio: bool = True) -> None:
            r = nv / iv if ratio and nv is not None and iv else float("nan")
            s.add_row(name, _fmt(iv, spec), _fmt(nv, spec) if nv is not None else "-", _fmt(r, ".2f"))

        row("deliveries", len(stream.items), len(stream.items) if naive else None, ratio=False)
        row("work orders run", len(intake.versions), sum(naive.statuses.values()) if naive else None)
        row("AgentLoop executions", len(ip.executions), len(np_.executions) if np_ else None)
        row("[bold]model calls[/]", ip.calls, np_.calls if np_ else None)
        row("model tokens", ip.tokens, np_.tokens if np_ else None)
        row("comments posted on the forge", len(ip.comments), len(np_.comments) if np_ else None)
        row("seconds until every run finished", ip.seconds_to_finish, np_.seconds_to_finish if np_ else None, ",.1f")
        row("CPU seconds, all stack processes", sum(v for k, v in ip.cpu.items() if k != "bench"),
            sum(v for k, v in np_.cpu.items() if k != "bench") if np_ else None, ",.1f")
        console.print(s)
        for ph in (ip, np_):
            if ph is not None:
                _log(f"  CPU s {ph.name:<6} " + ", ".join(f"{k} {v:.1f}" for k, v in ph.cpu.items()))
        if naive is not None:
            _log(f"  naive order outcomes: {dict(naive.statuses)}")


# -- main ---------------------------------------------------------------------------------

async def _run(a, stack: DevStack, stream: Stream) -> tuple[IntakeResult, NaiveResult | None]:
    stage(f"mixed stream through intake: {len(stream.items)} deliveries, then the runs")
    intake = await intake_phase(stack, stream, a.concurrency, a.timeout, _log)
    naive = None
    if not a.no_naive:
        stage(f"naive: one AgentLoop workflow per delivery ({len(stream.items)})")
        naive = await naive_phase(stack, stream, a.concurrency, a.timeout, _log, intake.phase.executions)
    return intake, naive


def _measurements(a, rep: BenchReport, stream: Stream, intake: IntakeResult | None, naive: NaiveResult | None,
                  ichecks: list[Check], nchecks: list[Check], error: str | None) -> None:
    def rows(checks: list[Check]) -> list[str]:
        return [f"{'PASS' if c.ok else 'FAIL' if c.fatal else 'WARN'} {c.name}: {c.detail}" for c in checks]

    m = rep.add(Measurement("mixed stream through intake", CAPACITY, verified=intake is not None and all(
        c.ok for c in ichecks if c.fatal), checks=rows(ichecks), error=None if intake is not None else error))
    if intake is not None:
        wall = intake.send_seconds
        m.figures = {"deliveries": len(intake.answers), "send_seconds": wall,
                     "deliveries_per_second": len(intake.answers) / wall if wall else None,
                     "p50_ms": latency_ms(intake.answers, None, 50), "p95_ms": latency_ms(intake.answers, None, 95),
                     "answers": dict(Counter(x.category for x in intake.answers)),
                     "work_versions": len(intake.versions), "model_calls": intake.phase.calls,
                     "comments": len(intake.phase.comments), "seconds_to_finish": intake.phase.seconds_to_finish}
    if a.no_naive:
        rep.add(Measurement("naive: one AgentLoop workflow per delivery", CAPACITY, skipped="--no-naive"))
        return
    n = rep.add(Measurement("naive: one AgentLoop workflow per delivery", CAPACITY,
                            verified=naive is not None and all(c.ok for c in nchecks if c.fatal), checks=rows(nchecks),
                            error=None if naive is not None else error))
    if naive is not None:
        n.figures = {"workflows": naive.starts, "model_calls": naive.phase.calls, "comments": len(naive.phase.comments),
                     "seconds_to_finish": naive.phase.seconds_to_finish}
        if intake is not None and intake.phase.calls:
            n.ratios = {"model_calls_naive_per_intake": naive.phase.calls / intake.phase.calls}


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
        report(a, stream, intake, naive, ichecks + nchecks)
        _measurements(a, rep, stream, intake, naive, ichecks, nchecks, error)
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
        console.print(f"[bold red]ERROR[/] {error}")
        if intake is not None:  # the error came after the intake phase: not tied to a measurement row
            rep.errors.append(error)
    if failed:
        console.print(f"[bold red]FAIL[/] {len(failed)} invariant(s) failed: " + "; ".join(failed))
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
