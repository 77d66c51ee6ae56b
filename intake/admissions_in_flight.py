"""Admissions in flight in this process: a duplicate of a version being decided waits for that decision.

In a duplicate storm several deliveries of one (work key, version) arrive while the first of them is
still reading the forge and deciding. The intake that goes on to read and decide a version registers
it here (:meth:`AdmissionsInFlight.enter`) before its forge read and releases it once its decision is
committed (accept, defer, reject) or it failed or was cancelled (the caller's ``finally``). A later
intake of the same key awaits that release (:meth:`AdmissionsInFlight.wait`, bounded) and then asks
the ledger once: taken → ``duplicate-work`` without a read; not taken (the first was rejected,
deferred, failed, cancelled) → its own full decision. The wait only orders intakes; the ledger stays
the only authority (the waiter always confirms there, and ``IntakeStore.decide`` dedupes anyway).

Scope: per process and per event loop (the loop is part of the key), in memory only: an entry lives
from its owner's read to its owner's commit and is removed then, so memory is bounded by the
intakes in progress. Another process admitting the same version is not seen here: the kept
snapshot's ledger re-checks (``intake/shared_reads.py``, ``taken_meanwhile``) cover that case.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

__all__ = ["AdmissionsInFlight", "InFlight", "DEFAULT_WAIT_SECONDS"]

DEFAULT_WAIT_SECONDS = 2.0
"""The longest a duplicate waits for the intake deciding its version before deciding on its own."""

_Key = tuple[asyncio.AbstractEventLoop, str, str | None, str, str]
"""(event loop, task, tenant, work key, version)."""


@dataclass
class InFlight:
    """One registered admission; :meth:`release` is idempotent (called after the commit and in ``finally``)."""

    _owner: AdmissionsInFlight | None
    _key: _Key | None
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def release(self) -> None:
        self.done.set()
        if self._owner is not None and self._key is not None:
            self._owner._release(self._key, self)
            self._owner = None


_NOTHING = InFlight(None, None)
"""What :meth:`AdmissionsInFlight.enter` returns when another intake already holds the key."""


class AdmissionsInFlight:
    """The registry (see the module docstring)."""

    def __init__(self, wait_seconds: float = DEFAULT_WAIT_SECONDS) -> None:
        self._wait_seconds = wait_seconds
        self._flights: dict[_Key, InFlight] = {}
        self.entered = self.waited = self.waiting = self.timed_out = 0
        """Counters: admissions registered, waits ended, waits in progress, waits that gave up."""

    def __len__(self) -> int:
        return len(self._flights)

    @staticmethod
    def _key(task: str, tenant: str | None, work_key: str, version: str) -> _Key:
        return asyncio.get_running_loop(), task, tenant or None, work_key, version

    def enter(self, task: str, tenant: str | None, work_key: str, version: str | None) -> InFlight:
        """Register this intake as deciding the version; a no-op handle when another holds it (or no version)."""
        if version is None:
            return _NOTHING
        key = self._key(task, tenant, work_key, version)
        if key in self._flights:
            return _NOTHING
        flight = self._flights[key] = InFlight(self, key)
        self.entered += 1
        return flight

    def _release(self, key: _Key, flight: InFlight) -> None:
        if self._flights.get(key) is flight:
            del self._flights[key]

    def held(self, task: str, tenant: str | None, work_key: str, version: str | None) -> bool:
        """Is another intake in this event loop deciding this version now?"""
        return version is not None and self._key(task, tenant, work_key, version) in self._flights

    async def wait(self, task: str, tenant: str | None, work_key: str, version: str | None) -> bool | None:
        """Wait (at most ``wait_seconds``) for the intake deciding this version. None: none is known in
        this event loop (no wait); True: it was released (its decision committed, or it failed); False:
        the wait gave up. The caller asks the ledger next in every case."""
        if version is None:
            return None
        flight = self._flights.get(self._key(task, tenant, work_key, version))
        if flight is None:
            return None
        self.waiting += 1
        try:
            await asyncio.wait_for(flight.done.wait(), self._wait_seconds)
            return True
        except TimeoutError:
            self.timed_out += 1
            return False
        finally:
            self.waiting -= 1
            self.waited += 1
