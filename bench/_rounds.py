"""Rounds: one side's timed run, two sides interleaved round by round, and their statistics.

A comparison (:class:`Comparison`) is intake vs. a baseline measured in rounds; within a round the
two sides run back to back and the side that goes first alternates (:func:`interleave`). Its
figures are medians over rounds; :meth:`Comparison.as_measurement` is its row in the JSON document.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Awaitable, Callable

from bench._forge_reads import ForgeReads
from bench._harness import Measurement, stage


def now() -> float:
    return time.perf_counter()


@dataclass
class SideRound:
    """One timed run of one side of a comparison."""

    ops: int
    seconds: float
    latencies: list[float] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.ops / self.seconds if self.seconds > 0 else 0.0


@dataclass
class Comparison:
    """Intake vs. baseline, measured in interleaved rounds."""

    name: str
    target: float
    unit: str
    base_unit: str = ""
    capacity: str = ""
    """How capacity was configured for this measurement (said in the output)."""
    p95_target: float | None = None
    """Upper bound for intake p95 / baseline p95, where there is one."""
    intake: list[SideRound] = field(default_factory=list)
    baseline: list[SideRound] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)
    """Human-readable verification lines (what was counted in the ledger / Temporal)."""
    forge_reads: ForgeReads | None = None
    """Forge requests per delivery and per unique version on the intake side (``bench/_forge_reads.py``)."""
    skipped: str | None = None
    error: str | None = None

    @property
    def ratios(self) -> list[float]:
        return [i.rate / b.rate for i, b in zip(self.intake, self.baseline, strict=False) if b.rate > 0]

    @property
    def intake_rate(self) -> float:
        return median([r.rate for r in self.intake])

    @property
    def baseline_rate(self) -> float:
        return median([r.rate for r in self.baseline])

    @property
    def ratio(self) -> float:
        """Median of the per-round ratios (each round's two sides ran back to back)."""
        return median(self.ratios)

    def latency(self, side: str, pct: float) -> float:
        """Median over rounds of the per-round ``pct`` latency percentile, in seconds."""
        rounds = self.intake if side == "intake" else self.baseline
        return median([percentile(r.latencies, pct) for r in rounds if r.latencies])
    @property
    def p95_ratio(self) -> float:
        """Intake p95 / baseline p95 (each the median over rounds of the per-round p95)."""
        return self.latency("intake", 95) / self.latency("baseline", 95) if self.baseline else float("nan")

    def as_measurement(self) -> Measurement:
        verified = None if self.skipped else self.error is None
        figures: dict = {}
        ratios: dict = {}
        if self.intake and self.baseline:
            figures = {"unit": self.unit, "baseline_unit": self.base_unit or self.unit,
                       "intake_rate": self.intake_rate, "baseline_rate": self.baseline_rate,
                       "rounds": len(self.intake), "ops": {"intake": [r.ops for r in self.intake],
                                                           "baseline": [r.ops for r in self.baseline]},
                       "latency_ms": {f"{s}_p{p}": self.latency(s, p) * 1000
                                      for s in ("intake", "baseline") for p in (50, 95)}}
            ratios = {"throughput": self.ratio, "throughput_target_min": self.target,
                      "throughput_per_round": self.ratios, "p95": self.p95_ratio}
            if self.p95_target is not None:
                ratios["p95_target_max"] = self.p95_target
        if self.forge_reads is not None:
            figures["forge_reads"] = self.forge_reads.as_json()
        return Measurement(self.name, self.capacity, figures, ratios, verified, list(self.checks),
                           self.skipped, self.error)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile (``pct`` in 0..100)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(pct / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


async def interleave(rounds: int, intake: Callable[[int], Awaitable[SideRound]],
                     baseline: Callable[[int], Awaitable[SideRound]], cmp: Comparison,
                     log: Callable[[str], None]) -> None:
    """Run both sides back to back per round, swapping which goes first every round."""
    for n in range(rounds):
        order = [("intake", intake), ("baseline", baseline)]
        if n % 2:
            order.reverse()
        for side, fn in order:
            stage(f"{cmp.name}: round {n + 1}/{rounds}, {side}")
            result = await fn(n)
            (cmp.intake if side == "intake" else cmp.baseline).append(result)
            unit = cmp.unit if side == "intake" else cmp.base_unit or cmp.unit
            log(f"  {cmp.name} round {n + 1}/{rounds} {side:<8} {result.ops:>6} ops in {result.seconds:6.2f}s "
                f"= {result.rate:9.1f} {unit}")


async def timed(seconds: float, step: Callable[[], Awaitable[object]]) -> SideRound:
    """One side's timed run: await ``step()`` back to back for ``seconds``, one operation each, with
    the latency of each (a sequential caller: the duplicate rejects and their bare-insert baseline)."""
    ops, lat = 0, []
    start = now()
    deadline = start + seconds
    t = start
    while t < deadline:
        await step()
        ops += 1
        t2 = now()
        lat.append(t2 - t)
        t = t2
    return SideRound(ops, t - start, lat)
