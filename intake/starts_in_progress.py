"""The versions this process's intake is starting, and the starts that repeats set off.

Intake commits an accept (version ``accepted``) and only then starts the run and marks it
(``admitted``, with the workflow id). A start that fails, or a ledger that goes away between the
commit and the mark (a PostgreSQL restart: the kill check or the mark cannot be written), leaves
the version ``accepted`` with no run, and its delivery answered 5xx. The outbox relay starts such
a version after its grace period (``intake/outbox.py``, every minute by default), but the sender
usually comes first: it repeats the delivery that was answered 5xx. That repeat — or any other
delivery of the version — finds the version accepted and never started (``Repeat.unstarted``),
and :class:`~intake.service.IntakeService` sets off its start (:meth:`StartsInProgress.start_soon`),
in a task of its own: the repeat is answered at once, as before, whatever Temporal is doing.

The registry tells such a repeat apart from a duplicate that merely arrived while this intake
service is still starting the version (between the commit and the mark, a few milliseconds in a
storm): that one must not start it a second time. Another service's start in progress (another
replica, or the worker's other intake service) is not seen here. Starting it twice is harmless —
signal-with-start by work key; an open run ignores an order of a generation and receipt it holds,
and a run that has ended is refused by the ledger's claim (the version ended) — and costs a signal.

Bounded: a key lives from just before its accept's commit until its mark is written or its start
failed; at most ``max_starts`` repeat-set-off starts at once (more are dropped, counted and logged:
the next repeat or the relay starts them); a version whose set-off start did not start it (a
failure, a kill in force, nothing left to start) waits ``cooldown_seconds`` before a repeat tries
again, so a storm of repeats during an outage costs one attempt per version per cooldown, not one
per repeat; at most ``max_cooling`` versions are remembered cooling (the oldest forgotten first).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from collections import Counter
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

__all__ = ["StartsInProgress", "MAX_STARTS", "COOLDOWN_SECONDS"]

log = logging.getLogger("sluicegate.intake")
MAX_STARTS = 32
"""Repeat-set-off starts in flight at once per intake service (each may wait out the 10 s start
timeout while Temporal is down)."""
COOLDOWN_SECONDS = 10.0
"""How long a version whose set-off start did not start it is left alone by repeats."""
MAX_COOLING = 4096


class StartsInProgress:
    """``with starts.hold(work_key, version):`` around an accept's start; :meth:`start_soon` for a
    repeat's; :meth:`held` asks whether one is in progress."""

    def __init__(self, max_starts: int = MAX_STARTS, cooldown_seconds: float = COOLDOWN_SECONDS,
                 max_cooling: int = MAX_COOLING, clock: Callable[[], float] = time.monotonic) -> None:
        self._held: Counter[tuple[str, str]] = Counter()
        self._max_starts, self._cooldown, self._max_cooling, self._clock = (max_starts, cooldown_seconds,
                                                                             max_cooling, clock)
        self._tasks: set[asyncio.Task[bool]] = set()
        self._cooling: dict[tuple[str, str], float] = {}
        self._next_drop_log = 0.0
        self.set_off = self.dropped = self.started = self.not_started = self.cut_off = 0
        """Counters: starts set off by repeats; repeats that set none off because ``max_starts`` ran;
        set-off starts that started their version, that did not (failed, killed, nothing to start),
        and that were cancelled (cut off at shutdown). ``set_off`` = started + not_started + cut_off
        + those still running (:meth:`counts`, exported as ``sluicegate.intake.repeat_starts``)."""

    def counts(self) -> dict[str, int]:
        """The counters by name (monotonic; the API exports them)."""
        return {"set_off": self.set_off, "dropped": self.dropped, "started": self.started,
                "not_started": self.not_started, "cut_off": self.cut_off}

    def __len__(self) -> int:
        return len(self._held)

    def held(self, work_key: str, version: str) -> bool:
        return (work_key, version) in self._held

    def enter(self, work_key: str, version: str) -> None:
        self._held[(work_key, version)] += 1

    def leave(self, work_key: str, version: str) -> None:
        key = (work_key, version)
        self._held[key] -= 1
        if self._held[key] <= 0:
            del self._held[key]

    @contextmanager
    def hold(self, work_key: str | None, version: str | None) -> Iterator[None]:
        """Register the start of (work key, version) for the block; nested holds of one key count."""
        if work_key is None or version is None:
            yield
            return
        self.enter(work_key, version)
        try:
            yield
        finally:
            self.leave(work_key, version)

    def start_soon(self, work_key: str, version: str, start: Callable[[], Coroutine[Any, Any, bool]]) -> bool:
        """Set off ``start()`` (True: it started the version) in a task of its own, unless the version
        is held (being started), cooling, or ``max_starts`` are in flight. True when set off."""
        key, now = (work_key, version), self._clock()
        if key in self._held or self._cooling.get(key, now) > now:
            return False
        self._cooling.pop(key, None)
        if len(self._tasks) >= self._max_starts:
            self.dropped += 1
            if now >= self._next_drop_log:  # at most one line per cooldown
                self._next_drop_log = now + self._cooldown
                log.warning("not starting %s@%s, accepted and never started: %d such starts in flight already "
                            "(%d left so far); the next repeat or the outbox relay will", work_key, version,
                            len(self._tasks), self.dropped, extra={"work_key": work_key})
            return False
        self.enter(work_key, version)  # now, not in the task: the next repeat must see it held
        try:
            # a context of its own: the repeat's request (and its trace span) ends before this does
            task = asyncio.get_running_loop().create_task(start(), context=contextvars.Context())
        except BaseException:
            self.leave(work_key, version)
            raise
        self.set_off += 1
        self._tasks.add(task)
        task.add_done_callback(partial(self._ended, key))  # also for a task cancelled before its first step
        return True

    def _ended(self, key: tuple[str, str], task: asyncio.Task[bool]) -> None:
        self._tasks.discard(task)
        self.leave(*key)
        if not task.cancelled() and task.exception() is None and task.result():
            self.started += 1
        else:
            if task.cancelled():  # at shutdown (wait()), or by the event loop's own end
                self.cut_off += 1
            else:
                self.not_started += 1
            if self._cooling and len(self._cooling) >= self._max_cooling:
                del self._cooling[next(iter(self._cooling))]  # the oldest
            self._cooling[key] = self._clock() + self._cooldown

    async def wait(self, timeout: float) -> int:
        """Wait (at most ``timeout`` seconds) for the starts in flight, then cancel what is left and
        say so: a process stopping lets them end before its ledger closes. Returns how many were cut off."""
        if not self._tasks:
            return 0
        _, left = await asyncio.wait(set(self._tasks), timeout=timeout)
        for task in left:
            task.cancel()
        if left:
            await asyncio.gather(*left, return_exceptions=True)
            log.warning("cut off %d start(s) of versions accepted and never started after %.0f s; they stay "
                        "accepted, for a later repeat or the outbox relay", len(left), timeout)
        return len(left)
