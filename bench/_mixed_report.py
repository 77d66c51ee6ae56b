"""The mixed-stream bench's report: the stream, the intake decisions, the invariants, intake vs. naive;
and its two measurements in the JSON document."""

from __future__ import annotations

import math
from collections import Counter

from bench._harness import BenchReport, Measurement
from bench._mixed_checks import Check
from bench._mixed_results import CATEGORIES, IntakeResult, NaiveResult, latency_ms
from bench._stream import KINDS, Stream
from bench._tables import console, log, table

out = console(150)
CAPACITY = ("limits lifted (NO_CAPACITY_LIMITS), the stack's worker drains: this bench measures dedupe and "
            "supersede against the naive baseline; capacity_bench measures the limits")
"""Capacity limits would defer part of the burst and replace queued versions while they wait."""


def _fmt(x: float, spec: str = ",.1f") -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def print_report(a, stream: Stream, intake: IntakeResult | None, naive: NaiveResult | None, checks: list[Check]) -> None:
    kinds = Counter(i.kind for i in stream.items)
    hows = Counter(i.how for i in stream.items)
    multi = Counter(Counter(i.work_key for i in stream.items if i.kind == "new").values())
    log(f"stream: seed {stream.seed}, {len(stream.items)} deliveries, "
         + ", ".join(f"{k} {kinds[k]} ({kinds[k] / len(stream.items):.0%})" for k in KINDS)
         + f"; by how: {dict(sorted(hows.items()))}")
    log(f"        {len(stream.pulls)} pull requests over {len({(p.owner, p.repo) for p in stream.pulls})} "
         f"repositories, {len(stream.new_items)} unique (PR, head) work items; versions per work key: "
         + ", ".join(f"{v}x{n}" for v, n in sorted(multi.items())))

    if intake is not None:
        want = Counter("accept" if i.kind == "new" else
                       {"redeliver": "reject:duplicate-delivery", "stale": "reject:stale-version"}[i.kind]
                       for i in stream.items)
        got = Counter(x.category for x in intake.answers)
        wall = intake.send_seconds
        t = table(f"Intake decisions: {len(intake.answers)} deliveries at concurrency {a.concurrency}, "
                  f"worker running, sent in {wall:.2f}s",
                  ("outcome", "expected", "got", "share", "decisions/s", "p50 ms", "p95 ms"))
        for cat in CATEGORIES:
            t.add_row(cat, str(want[cat]), str(got[cat]), f"{got[cat] / len(intake.answers):.0%}",
                      _fmt(got[cat] / wall), _fmt(latency_ms(intake.answers, cat, 50)),
                      _fmt(latency_ms(intake.answers, cat, 95)))
        t.add_row("[bold]overall[/]", str(len(stream.items)), str(len(intake.answers)), "100%",
                  f"[bold]{_fmt(len(intake.answers) / wall)}[/]", _fmt(latency_ms(intake.answers, None, 50)),
                  _fmt(latency_ms(intake.answers, None, 95)))
        out.print(t)
        others = Counter(x.label for x in intake.answers if x.category == "other")
        if others:
            log("  other answers: " + ", ".join(f"{k} x{v}" for k, v in others.most_common(8)))
        log("  ledger receipts (source github): " + ", ".join(f"{k} {v}" for k, v in sorted(intake.receipts.items())))
        log(f"  work versions: {dict(Counter(v.status for v in intake.versions))}")

    cols = ("check", "detail", "verdict")
    c = table("Invariants", cols, left=cols)
    for ch in checks:
        verdict = "[green]PASS[/]" if ch.ok else ("[bold red]FAIL[/]" if ch.fatal else "[yellow]WARN[/]")
        c.add_row(ch.name, ch.detail, verdict)
    out.print(c)

    if intake is not None:
        s = table("Intake vs. naive (one AgentLoop workflow per delivery), same stream, same stack",
                  ("", "intake", "naive", "naive / intake"))
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
        out.print(s)
        for ph in (ip, np_):
            if ph is not None:
                log(f"  CPU s {ph.name:<6} " + ", ".join(f"{k} {v:.1f}" for k, v in ph.cpu.items()))
        if naive is not None:
            log(f"  naive order outcomes: {dict(naive.statuses)}")


def measurements(a, rep: BenchReport, stream: Stream, intake: IntakeResult | None, naive: NaiveResult | None,
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
