"""The capacity bench's simulated parts: the runs, the dispatcher that re-decides deferred work, a
sampler of the ledger's counters.

No workflow starts: :class:`SimulatedRuns` is the admitter port, a timer per run that releases its
slots and triggers a dispatch pass, as the agent workflow's release activity does. The dispatch pass
itself is the real ``dispatch_once``.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass

from intake.capacity.dispatch import DispatchReport, RoomCheck, dispatch_once
from intake.capacity.fairness import DEFAULT_AGING_SECONDS
from intake.identity import workflow_id_for
from intake.ports import Admission
from intake.service import IntakeService
from ledger import CapacityLedger, DeferredQueue


class Dispatcher:
    """Dispatch passes, one at a time (as ``CapacityActivities._dispatch`` serializes them)."""

    def __init__(self, queue: DeferredQueue, capacity: CapacityLedger, batch: int,
                 aging_seconds: float | None = DEFAULT_AGING_SECONDS) -> None:
        self._queue, self._capacity, self._batch = queue, capacity, batch
        self._aging_seconds = aging_seconds
        self.service: IntakeService | None = None
        """Set once built (the service's admitter, :class:`SimulatedRuns`, needs this dispatcher)."""
        self._lock = asyncio.Lock()
        self.passes: Counter = Counter()
        self.totals: Counter = Counter()
        self.seconds: list[float] = []
        """Duration of each pass (lock held)."""
        self.rechecks: list[int] = []
        """Items decided again per pass (admitted, deferred again, dropped, dead)."""
        self.errors: list[str] = []

    async def run_pass(self, why: str) -> None:
        async with self._lock:
            t = time.perf_counter()
            try:
                active = await asyncio.to_thread(self._capacity.active_work_by_tenant)
                room = RoomCheck(await asyncio.to_thread(self._capacity.counters), self.service.capacity.planner)
                report: DispatchReport = await dispatch_once(
                    self._queue, self.service, {t: len(k) for t, k in active.items()}, batch=self._batch,
                    room=room, aging_seconds=self._aging_seconds)
            except Exception as exc:  # noqa: BLE001 - reported, and fails the bench
                self.errors.append(f"dispatch pass ({why}): {type(exc).__name__}: {exc}")
                return
            self.seconds.append(time.perf_counter() - t)
        self.rechecks.append(len(report.admitted) + report.deferred + len(report.dropped) + len(report.dead))
        self.passes[why] += 1
        self.totals.update(admitted=len(report.admitted), dropped=len(report.dropped), dead=len(report.dead),
                           deferred=report.deferred, skipped=report.skipped)


@dataclass
class Started:
    tenant: str
    repo: str
    seconds: float


class SimulatedRuns:
    """The ``intake.ports.Admitter`` port. No workflow starts: an admitted run "runs" for a seeded
    random duration on the event loop, then ends like the agent workflow's last activity does —
    its slots are released (``CapacityLedger.release``), then a dispatch pass runs.

    It counts runs in flight per limit key from ``admit`` until the run ends (before its slots
    are released), so its counts never exceed the ledger's holds: a count above a limit is a
    real over-admission."""

    def __init__(self, capacity: CapacityLedger, dispatcher: Dispatcher, rng: random.Random,
                 run_seconds: tuple[float, float]) -> None:
        self._capacity, self._dispatcher, self._rng, self._run = capacity, dispatcher, rng, run_seconds
        self.in_flight: Counter = Counter()
        self.max_seen: Counter = Counter()
        self.started: dict[str, Started] = {}
        self.admits: Counter = Counter()
        self.errors: list[str] = []
        self._tasks: set[asyncio.Task] = set()

    async def admit(self, admission: Admission) -> tuple[str, str | None]:
        c = admission.candidate
        slots = ("global", f"tenant:{c.tenant}", f"key:repo:{c.target.owner}/{c.target.repo}")
        for key in slots:
            self.in_flight[key] += 1
            self.max_seen[key] = max(self.max_seen[key], self.in_flight[key])
        seconds = self._rng.uniform(*self._run)
        self.admits[c.work_key] += 1
        self.started[c.work_key] = Started(c.tenant, f"{c.target.owner}/{c.target.repo}", seconds)
        asyncio.get_running_loop().call_later(seconds, self._end, c.work_key, slots)
        return workflow_id_for(c.work_key), f"sim-{self.admits.total()}"

    def _end(self, work_key: str, slots: tuple[str, ...]) -> None:
        for key in slots:
            self.in_flight[key] -= 1
        task = asyncio.get_running_loop().create_task(self._release(work_key))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _release(self, work_key: str) -> None:
        try:
            await asyncio.to_thread(self._capacity.release, work_key)
        except Exception as exc:  # noqa: BLE001 - reported, and fails the bench
            self.errors.append(f"release {work_key}: {type(exc).__name__}: {exc}")
        await self._dispatcher.run_pass("release")

    @property
    def busy(self) -> bool:
        return self.in_flight["global"] > 0 or bool(self._tasks)


class CounterSampler(threading.Thread):
    """Reads ``CapacityLedger.counters()`` every ``interval`` seconds; keeps each key's maximum."""

    def __init__(self, capacity: CapacityLedger, interval: float = 0.05) -> None:
        super().__init__(daemon=True, name="counter-sampler")
        self._capacity, self._interval = capacity, interval
        self.max_seen: Counter = Counter()
        self.samples = 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(self._interval):
            for key, active in self._capacity.counters().items():
                self.max_seen[key] = max(self.max_seen[key], active)
            self.samples += 1

    def stop(self) -> None:
        self._stop_event.set()
        self.join()
