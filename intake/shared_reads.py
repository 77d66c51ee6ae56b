"""Per-target single-flight freshness reads, and a short-lived snapshot used only to reject.

A duplicate storm makes many intakes of one pull request ask the forge the same question at the
same moment. :class:`SharedReads` wraps the real :class:`~intake.ports.TargetReader`:

* **Single flight.** Intakes of one (tenant, target) share one in-flight read — but only a read
  that *started at or after the delivery was received*. A read begun earlier may predate the very
  change the delivery announces (a push, a close, a reopen), so joining it could reject a new head
  as ``stale-version`` or admit a pull request that was just closed. A read started after receipt
  sees a state at least as new as the event, exactly like a read the delivery would start itself.
* **Snapshot, reject only.** A finished read is kept ``intake.freshness_snapshot_seconds``
  (default 3 s). A later intake of the same target may use it only when (a) its read also started
  at or after that delivery was received (same argument as above: it is as fresh as a read of its
  own) and (b) it leads to a rejection (``target-not-found``, ``target-closed``, ``stale-version``).
  A snapshot that says "fresh" is never used to admit: admission starts a run and spends the model
  budget, so it always rests on a read that the admitting delivery started or joined while it was
  in flight. Why a snapshot may be trusted to reject at all: under (a) the state it saw is no older
  than the event, so the event's version was already not current (or the target closed or gone)
  after the event happened; a later push or reopen sends its own delivery, which is read anew.

Failures are shared too: joiners of a read that fails get the same ``SourceUnavailable`` (each
delivery is then queued durably by the service); failed reads are not kept as snapshots.

Scope: per process, per event loop. Several API processes (or the worker's dispatcher) each have
their own flights and snapshots; nothing is shared across processes, so N processes may make up
to N reads of one target at once. The forge's conditional requests (ETag, ``sluicegate.forge_client``)
make those repeats cheap where they happen.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Callable

from cachetools import TTLCache

from intake.envelope import Envelope, PullRequestRef, WorkCandidate
from intake.freshness import TargetSnapshot, assess_freshness
from intake.ports import TargetReader
from intake.unread import Unread, read_within

__all__ = ["SharedReads", "fresh_snapshot"]

DEFAULT_SNAPSHOT_SECONDS = 3.0
MAX_SNAPSHOTS = 10_000
"""Targets remembered at once (least recently used dropped first); bounds memory under a flood."""


@dataclass
class _Flight:
    started_at: datetime
    loop: asyncio.AbstractEventLoop
    task: asyncio.Future


@dataclass(frozen=True)
class _Kept:
    started_at: datetime
    snapshot: TargetSnapshot


def _retrieve(task: asyncio.Future) -> None:
    if not task.cancelled():
        task.exception()  # a failure nobody waits for any more must not be reported as unretrieved


class SharedReads:
    """A :class:`TargetReader` sharing reads per target (see the module docstring)."""

    def __init__(self, reader: TargetReader, snapshot_seconds: float = DEFAULT_SNAPSHOT_SECONDS, *,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC),
                 timer: Callable[[], float] = time.monotonic) -> None:
        """``clock``: wall time, compared with deliveries' ``received_at``; ``timer``: snapshot ages."""
        self._reader = reader
        self._clock = clock
        self._flights: dict[tuple, _Flight] = {}
        self._kept: TTLCache | None = (TTLCache(MAX_SNAPSHOTS, snapshot_seconds, timer=timer)
                                       if snapshot_seconds > 0 else None)
        self.started = self.joined = self.snapshot_rejects = 0
        """Counters: reads started, reads joined in flight, rejections decided from a snapshot."""

    async def read(self, ref: PullRequestRef, tenant: str | None = None, *,
                   not_before: datetime | None = None) -> TargetSnapshot:
        """The target's state from a read started at or after ``not_before`` (None: a new read)."""
        key = (tenant or None, ref.target_id)
        loop = asyncio.get_running_loop()
        flight = self._flights.get(key)
        if (flight is not None and not_before is not None and flight.loop is loop and not flight.task.done()
                and flight.started_at >= not_before):
            self.joined += 1
            return await asyncio.shield(flight.task)
        flight = _Flight(self._clock(), loop, asyncio.ensure_future(self._reader.read(ref, tenant)))
        flight.task.add_done_callback(_retrieve)
        flight.task.add_done_callback(lambda task: self._landed(key, flight, task))
        self._flights[key] = flight
        self.started += 1
        return await asyncio.shield(flight.task)

    def _landed(self, key: tuple, flight: _Flight, task: asyncio.Future) -> None:
        if self._flights.get(key) is flight:
            del self._flights[key]
        if self._kept is not None and not task.cancelled() and task.exception() is None:
            kept = self._kept.get(key)
            if kept is None or kept.started_at <= flight.started_at:
                self._kept[key] = _Kept(flight.started_at, task.result())

    def rejecting_snapshot(self, candidate: WorkCandidate, received_at: datetime) -> TargetSnapshot | None:
        """A kept snapshot that is as fresh as ``received_at`` and rejects ``candidate``; else None."""
        if self._kept is None:
            return None
        kept = self._kept.get((candidate.tenant or None, candidate.target.target_id))
        if kept is None or kept.started_at < received_at:
            return None
        if assess_freshness(candidate.input_version, kept.snapshot) is None:
            return None  # a "fresh" snapshot never admits: read (or join a read) instead
        self.snapshot_rejects += 1
        return kept.snapshot

    def since(self, received_at: datetime) -> TargetReader:
        """This reader as seen by a delivery received at ``received_at``."""
        return _Since(self, received_at)


class _Since:
    def __init__(self, shared: SharedReads, not_before: datetime) -> None:
        self._shared, self._not_before = shared, not_before

    async def read(self, ref: PullRequestRef, tenant: str | None = None) -> TargetSnapshot:
        return await self._shared.read(ref, tenant, not_before=self._not_before)


async def fresh_snapshot(reader: TargetReader, envelope: Envelope, candidate: WorkCandidate,
                         deadline: float) -> TargetSnapshot | Unread:
    """The freshness answer for one delivery: a kept snapshot when it rejects, else a (shared) read
    within ``deadline``. A plain reader (not :class:`SharedReads`) is simply read."""
    if not isinstance(reader, SharedReads):
        return await read_within(reader, candidate, deadline)
    kept = reader.rejecting_snapshot(candidate, envelope.received_at)
    if kept is not None:
        return kept
    return await read_within(reader.since(envelope.received_at), candidate, deadline)
