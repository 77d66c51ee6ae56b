"""CPU seconds per process and a fixed-concurrency driver, for the end-to-end comparison (``bench/_e2e.py``)
and the benches that reuse them (``bench/_loop.py``, ``bench/_scale.py``, ``bench/peers_bench.py``, ...)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any, Awaitable, Callable

from bench._common import SideRound, now
from sluicegate.devstack import DevStack

CPU_TICK = os.sysconf("SC_CLK_TCK")


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of one process (all its threads)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CPU_TICK


class CpuMeter:
    """CPU seconds used per stack process (and this process) while one side ran."""

    def __init__(self, stack: DevStack) -> None:
        self.pids = {name: p.proc.pid for name, p in stack.processes.items() if p.proc is not None}
        self.pids["bench"] = os.getpid()
        self.samples: dict[str, list[dict[str, float]]] = {"intake": [], "baseline": [], "front": []}

    def snapshot(self) -> dict[str, float]:
        return {name: process_cpu(pid) for name, pid in self.pids.items()}

    def settle(self, idle_share: float = 0.10, window: float = 0.5, limit: float = 30.0) -> float:
        """Wait until the stack's processes (not this one) together use under ``idle_share`` of one core
        over ``window`` seconds, at most ``limit`` seconds; the seconds waited. So a side's timed round
        does not pay for work another side left behind in a shared process (the Temporal server still
        working off a previous side's signals and workflow tasks)."""
        started = time.monotonic()
        while time.monotonic() - started < limit:
            before = self.snapshot()
            time.sleep(window)
            after = self.snapshot()
            if sum(after[k] - before[k] for k in after if k != "bench") < idle_share * window:
                break
        return time.monotonic() - started

    def record(self, side: str, before: dict[str, float], ops: int) -> None:
        after = self.snapshot()
        if ops:
            self.samples[side].append({k: (after[k] - before[k]) * 1000 / ops for k in after})

    def per_op(self, side: str) -> dict[str, float]:
        """Median over rounds of CPU milliseconds per operation, by process."""
        rows = self.samples[side]
        return {k: sorted(r[k] for r in rows)[len(rows) // 2] for k in (rows[0] if rows else {})}


async def drive(items: list, concurrency: int, call: Callable[[Any], Awaitable[bool]]) -> SideRound:
    """Run ``call`` over ``items`` with ``concurrency`` in flight; ops = calls that returned True."""
    it = iter(items)
    ok, lat = 0, []

    async def worker() -> None:
        nonlocal ok
        for item in it:
            t = now()
            good = await call(item)
            lat.append(now() - t)
            ok += good

    start = now()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return SideRound(ok, now() - start, lat)
