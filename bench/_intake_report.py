"""The intake bench's human report: capacity and check lines, the rate and latency tables, the
end-to-end summary and CPU lines (``bench/intake_bench.py``; the JSON document is the harness's)."""

from __future__ import annotations

import math
import sys

from rich.console import Console
from rich.table import Table

from bench._common import Comparison

console = Console(highlight=False, width=None if sys.stdout.isatty() else 140)


def _log(line: str) -> None:
    print(line, flush=True)


def _fmt(x: float, spec: str = ",.0f") -> str:
    return "-" if x is None or math.isnan(x) else format(x, spec)


def report(results: list[Comparison], cpu: dict | None) -> None:
    for c in results:
        _log(f"  capacity [{c.name}] {c.capacity}")
        for line in c.checks:
            _log(f"  check [{c.name}] {line}")
    t = Table(title="Sluicegate intake vs. bare baseline (median of per-round figures)")
    for col in ("measurement", "intake rate", "baseline rate", "ratio", "target", "verdict"):
        t.add_column(col, justify="left" if col in ("measurement", "verdict") else "right")
    for c in results:
        if c.skipped or c.error:
            verdict = "[yellow]SKIPPED[/]" if c.skipped else "[red]ERROR[/]"
            t.add_row(c.name, "-", "-", "-", f">= {c.target:.1f}", verdict)
            continue
        verdict = "[green]PASS[/]" if c.ratio >= c.target else "[red]BELOW[/]"
        t.add_row(c.name, f"{_fmt(c.intake_rate)} {c.unit}", f"{_fmt(c.baseline_rate)} {c.base_unit or c.unit}",
                  _fmt(c.ratio, ".2f"), f">= {c.target:.1f}", verdict)
    console.print(t)
    lat = Table(title="Latency per operation, ms (median over rounds of each round's percentile)")
    for col in ("measurement", "intake p50", "intake p95", "baseline p50", "baseline p95", "per-round ratios"):
        lat.add_column(col, justify="left" if col == "measurement" else "right")
    for c in results:
        if c.intake and c.baseline:
            lat.add_row(c.name, *(_fmt(c.latency(s, p) * 1000, ".2f") for s in ("intake", "baseline") for p in (50, 95)),
                        " ".join(f"{r:.2f}" for r in c.ratios))
    console.print(lat)
    for c in results:
        if c.p95_target is not None and c.intake and c.baseline:
            p95_ok = c.p95_ratio <= c.p95_target
            console.print(f"[bold]{c.name}[/] (same concurrency on both sides): throughput "
                          f"ratio [bold]{_fmt(c.ratio, '.2f')}[/] (target >= {c.target:.1f}), p95 ratio "
                          f"[bold]{_fmt(c.p95_ratio, '.2f')}[/] (target <= {c.p95_target:.1f}, "
                          f"{'[green]PASS[/]' if p95_ok else '[red]ABOVE[/]'}); capacity: {c.capacity}")
    if cpu:
        _log("CPU ms per operation by process, end to end (median over rounds):")
        for side, per in cpu.items():
            _log(f"  {side:<8} " + ", ".join(f"{k} {v:.2f}" for k, v in per.items())
                 + f"  (total {sum(per.values()):.2f})")
    for c in results:
        if c.skipped:
            console.print(f"[yellow]SKIPPED[/] {c.name}: {c.skipped}", markup=True)
        if c.error:
            console.print(f"[red]ERROR[/] {c.name}: {c.error}", markup=True)
