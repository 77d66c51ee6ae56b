"""The figures of ``bench/loop_bench.py``'s per-step overhead measurement, and what its parts share.

The measurements themselves: ``bench/_loop_overhead.py`` (AgentLoop vs. the bare workflow),
``bench/_loop_restart.py`` (worker SIGKILL mid-run) and ``bench/_crash_calls.py`` (calls per PR);
their reports: ``bench/_loop_report.py`` (tables) and ``bench/_loop_rows.py`` (JSON rows).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Callable

from bench._common import SideRound, median, now, percentile

Log = Callable[[str], None]
MODEL_STEPS, TOOL_STEPS = 3, 2
SIDES = ("loop", "bare", "bare_agent")
"""The AgentLoop, the bare no-op activity loop, the bare agent loop (model + forge calls, no runtime)."""
BASELINES = {"bare": "bare no-op", "bare_agent": "bare agent"}
"""The simulator's reviewer: model -> get diff -> model -> post comment -> model (stop)."""


@dataclass
class Overhead:
    orders: int
    concurrency: int
    loop: list[SideRound] = field(default_factory=list)
    bare: list[SideRound] = field(default_factory=list)
    bare_agent: list[SideRound] = field(default_factory=list)
    """The bare agent (``bench/_bare_agent.py``): the same shape, making the model and forge calls."""
    cpu: dict[str, dict[str, list[float]]] = field(default_factory=lambda: {s: {} for s in SIDES})
    """side -> process -> per-round CPU ms per model step."""
    checks: list[str] = field(default_factory=list)
    events: dict[str, dict[str, float]] = field(default_factory=dict)
    """side -> Temporal history events per model step, counted over the last round's orders (what dominates)."""
    sims_in_process: bool = False
    """The forge and model simulators ran as threads of the bench process (sharing its GIL with the
    workers), not as the stack's own simulator processes."""

    @property
    def bench_proc(self) -> str:
        """The CPU key of the bench process (both workers, the client; the simulators when in process)."""
        return "bench (workers, sims)" if self.sims_in_process else "bench (workers)"

    def per_step_ms(self, side: str) -> float:
        """Median over rounds of wall ms per model step (orders x 3 steps per round)."""
        return median([r.seconds * 1000 / r.ops for r in getattr(self, side) if r.ops])

    def latency_per_step_ms(self, side: str, pct: float) -> float:
        """Median over rounds of the per-order latency percentile, divided by 3 steps."""
        return median([percentile(r.latencies, pct) * 1000 / MODEL_STEPS for r in getattr(self, side)])

    @property
    def ratios(self) -> list[float]:
        """Per round: loop ms/step / bare (no-op) ms/step (the sides ran back to back)."""
        return self.ratios_vs("bare")

    def ratios_vs(self, base: str) -> list[float]:
        """Per round: loop ms/step / ``base`` ms/step (``bare`` or ``bare_agent``)."""
        return [(lo.seconds / lo.ops) / (b.seconds / b.ops) for lo, b in zip(self.loop, getattr(self, base),
                                                                              strict=False) if lo.ops and b.ops]

    def cpu_ratio(self, base: str, proc: str) -> float:
        """Loop CPU ms per step / ``base``'s, in process ``proc`` (medians over rounds)."""
        return self.cpu_ms("loop", proc) / self.cpu_ms(base, proc)

    def cpu_ms(self, side: str, proc: str) -> float:
        return median(self.cpu[side].get(proc, []))


async def drive(n: int, concurrency: int, one: Callable[[int], Any]) -> SideRound:
    """Run ``one(i)`` for i in range(n), ``concurrency`` at a time; latencies per call."""
    sem = asyncio.Semaphore(concurrency)
    lat: list[float] = []

    async def run(i: int) -> None:
        async with sem:
            t = now()
            await one(i)
            lat.append(now() - t)

    start = now()
    await asyncio.gather(*(run(i) for i in range(n)))
    return SideRound(n * MODEL_STEPS, now() - start, lat)
