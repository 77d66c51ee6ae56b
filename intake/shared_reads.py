"""Per-target single-flight freshness reads, and a short-lived snapshot used only to reject.

A duplicate storm makes many intakes of one pull request ask the forge the same question at the
same moment. :class:`SharedReads` wraps the real :class:`~intake.ports.TargetReader`:

* **Single flight.** Intakes of one (tenant, target) share one in-flight read when either
  - the read *started at or after the delivery was received*: a read begun earlier may predate the
    very change the delivery announces (a push, a close, a reopen), so in general it could reject
    a new head as ``stale-version`` or admit a pull request that was just closed; a read started
    after receipt sees a state at least as new as the event, like a read the delivery would start
    itself; or
  - the read was started for an event *identical in what freshness depends on* — same version,
    same news (``opened`` and ``synchronize`` both say "head abc123 appeared"; ``reopened``,
    ``ready_for_review`` and ``closed`` each say something a read begun earlier may predate). Such a delivery tells the
    forge nothing the first one did not, so the first one's read answers it exactly as it answered
    the first; a later change (a new push, a close, a reopen) has another version or type and
    sends its own delivery, which is never answered by this read. This is what makes a duplicate
    storm cost one read per version. (The one gap: a force-push *back* to an earlier head inside
    the read's lifetime, whose event would be answered by a read that saw the intermediate head.)
    An event without a version (a manual trigger with no ``input_version``: "review what is there
    now") has no origin: it shares only reads started after its receipt.
* **Snapshot, reject only.** A finished read is kept ``intake.freshness_snapshot_seconds``
  (default 3 s), under the same two rules. It is used to decide a rejection
  (``target-not-found``, ``target-closed``, ``stale-version``) without a read; a snapshot that says
  "fresh" is never used to admit — admission starts a run and spends the model budget, so it always
  rests on a read in flight that the delivery started or joined. Instead, a "fresh" snapshot for the
  same version means another intake was just admitting that version: the ledger is asked again
  (:func:`taken_meanwhile`, a few times within 140 ms) and a version taken meanwhile is ``duplicate-work``
  without a read. That polling is the fallback for an admission in *another* process: one in this
  process is awaited instead (``intake/admissions_in_flight.py``: the service waits for its commit,
  then asks the ledger once, and never reaches :func:`taken_meanwhile` unless that wait gave up). Why a snapshot may be trusted to reject: under the rules above it saw a state no
  older than the event (or it answered an identical event), so the event's version was already
  not current (or the target closed or gone) after the event happened.

Failures are shared too: joiners of a read that fails get the same ``SourceUnavailable`` (each
delivery is then queued durably by the service); failed reads are not kept as snapshots.

Per task: one :class:`SharedReads` per task (``TaskIntake.reader``), and the task's name is part of
every flight and snapshot key besides, so a pull request's read and an issue's read of one number
never answer each other. The kept snapshot is judged by the task's own freshness rule; a verdict of
``source-unavailable`` (the source lags behind the event) never rejects.

Scope: per process, per event loop. Several API processes (or the worker's dispatcher) each have
their own flights and snapshots; nothing is shared across processes, so N processes may make up
to N reads of one target at once. The forge's conditional requests (ETag, ``sluicegate.forge.client``)
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
from intake.decision import Reason
from intake.ports import FreshnessRule, IntakeStore, TargetReader
from intake.receipts import ReceiptDraft
from intake.repeats import look_up
from intake.unread import Unread, read_within

__all__ = ["SharedReads", "fresh_snapshot", "taken_meanwhile"]

DEFAULT_SNAPSHOT_SECONDS = 3.0
LEDGER_RECHECK_WAITS = (0.0, 0.02, 0.04, 0.08)
"""Pauses before each ledger re-check of a version another intake is admitting (``taken_meanwhile``)."""
MAX_SNAPSHOTS = 10_000
"""Targets remembered at once (least recently used dropped first); bounds memory under a flood."""


Origin = tuple[str | None, str]
"""What a read was started for: (the event's version, the event's type)."""


# Event types that carry the same news for one version: "head V appeared" (a pull request opened at
# V, or a push of V). ``reopened``, ``ready_for_review`` and ``closed`` each announce a change of
# state a read begun earlier may predate (closed, draft, open), so they stay distinct.
_SAME_NEWS = {"pull_request.synchronize": "pull_request.opened"}


def origin_of(envelope: Envelope, candidate: WorkCandidate) -> Origin | None:
    """What a read for this event is started for; None without a version (it names no news to share)."""
    if candidate.input_version is None:
        return None
    return candidate.input_version, _SAME_NEWS.get(envelope.type, envelope.type)


def _same_origin(origin: Origin | None, other: Origin | None) -> bool:
    return origin is not None and origin == other


_Key = tuple[str | None, str, str]
"""(tenant, task, target id): what a read is shared by (a PR read and an issue read never share)."""


@dataclass
class _Flight:
    started_at: datetime
    origin: Origin | None
    loop: asyncio.AbstractEventLoop
    task: asyncio.Future[TargetSnapshot]

    def answers(self, not_before: datetime | None, origin: Origin | None) -> bool:
        return not_before is not None and (self.started_at >= not_before or _same_origin(origin, self.origin))


@dataclass(frozen=True)
class _Kept:
    started_at: datetime
    origin: Origin | None
    snapshot: TargetSnapshot

    def answers(self, not_before: datetime, origin: Origin | None) -> bool:
        return self.started_at >= not_before or _same_origin(origin, self.origin)


def _retrieve(task: asyncio.Future[TargetSnapshot]) -> None:
    if not task.cancelled():
        task.exception()  # a failure nobody waits for any more must not be reported as unretrieved


class SharedReads:
    """A :class:`TargetReader` sharing reads per target (see the module docstring)."""

    def __init__(self, reader: TargetReader, snapshot_seconds: float = DEFAULT_SNAPSHOT_SECONDS, *,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC),
                 timer: Callable[[], float] = time.monotonic, task: str = "review",
                 freshness: FreshnessRule = assess_freshness) -> None:
        """``clock``: wall time, compared with deliveries' ``received_at``; ``timer``: snapshot ages.
        ``task``: the task whose targets this reader reads (part of every flight and snapshot key, so a
        pull request's and an issue's read of one number never share); ``freshness``: its rule."""
        self._reader = reader
        self._task = task
        self._freshness = freshness
        self._clock = clock
        self._flights: dict[_Key, _Flight] = {}
        self._kept: TTLCache[_Key, _Kept] | None = (TTLCache(MAX_SNAPSHOTS, snapshot_seconds, timer=timer)
                                       if snapshot_seconds > 0 else None)
        self.started = self.joined = self.snapshot_rejects = self.rechecks = 0
        """Counters: reads started, reads joined in flight, rejections decided from a snapshot, ledger
        re-checks of a version a kept snapshot says is being admitted (:func:`taken_meanwhile`)."""

    async def read(self, ref: PullRequestRef, tenant: str | None = None, *,
                   not_before: datetime | None = None, origin: Origin | None = None) -> TargetSnapshot:
        """The target's state from a read started at or after ``not_before`` or for the same
        ``origin`` (see the module docstring); ``not_before=None``: a new read."""
        key = (tenant or None, self._task, ref.target_id)
        loop = asyncio.get_running_loop()
        flight = self._flights.get(key)
        if (flight is not None and flight.loop is loop and not flight.task.done()
                and flight.answers(not_before, origin)):
            self.joined += 1
            return await asyncio.shield(flight.task)
        flight = _Flight(self._clock(), origin, loop, asyncio.ensure_future(self._reader.read(ref, tenant)))
        flight.task.add_done_callback(_retrieve)
        flight.task.add_done_callback(lambda task: self._landed(key, flight, task))
        self._flights[key] = flight
        self.started += 1
        return await asyncio.shield(flight.task)

    def _landed(self, key: _Key, flight: _Flight, task: asyncio.Future[TargetSnapshot]) -> None:
        if self._flights.get(key) is flight:
            del self._flights[key]
        if self._kept is not None and not task.cancelled() and task.exception() is None:
            kept = self._kept.get(key)
            if kept is None or kept.started_at <= flight.started_at:
                self._kept[key] = _Kept(flight.started_at, flight.origin, task.result())

    def _usable(self, envelope: Envelope, candidate: WorkCandidate) -> TargetSnapshot | None:
        if self._kept is None:
            return None
        kept = self._kept.get((candidate.tenant or None, self._task, candidate.target.target_id))
        if kept is None or not kept.answers(envelope.received_at, origin_of(envelope, candidate)):
            return None
        return kept.snapshot

    def rejecting_snapshot(self, envelope: Envelope, candidate: WorkCandidate) -> TargetSnapshot | None:
        """A kept snapshot that answers this delivery (module docstring) and rejects it; else None."""
        kept = self._usable(envelope, candidate)
        if kept is None or self._verdict(candidate, kept) in (None, Reason.SOURCE_UNAVAILABLE):
            return None  # a "fresh" snapshot never admits, a lagging one never rejects: read instead
        self.snapshot_rejects += 1
        return kept

    def saw_fresh(self, envelope: Envelope, candidate: WorkCandidate) -> bool:
        """Does a kept snapshot that answers this delivery say its version is fresh (being admitted)?"""
        kept = self._usable(envelope, candidate)
        return kept is not None and self._verdict(candidate, kept) is None

    def _verdict(self, candidate: WorkCandidate, kept: TargetSnapshot) -> Reason | None:
        return self._freshness(candidate.input_version, kept, candidate.content_digest)

    def since(self, envelope: Envelope, candidate: WorkCandidate) -> TargetReader:
        """This reader as seen by one delivery (its receipt time and its origin)."""
        return _Since(self, envelope.received_at, origin_of(envelope, candidate))


class _Since:
    def __init__(self, shared: SharedReads, not_before: datetime, origin: Origin | None) -> None:
        self._shared, self._not_before, self._origin = shared, not_before, origin

    async def read(self, ref: PullRequestRef, tenant: str | None = None) -> TargetSnapshot:
        return await self._shared.read(ref, tenant, not_before=self._not_before, origin=self._origin)


async def fresh_snapshot(reader: TargetReader, envelope: Envelope, candidate: WorkCandidate,
                         deadline: float) -> TargetSnapshot | Unread:
    """The freshness answer for one delivery: a kept snapshot when it rejects, else a (shared) read
    within ``deadline``. A plain reader (not :class:`SharedReads`) is simply read."""
    if not isinstance(reader, SharedReads):
        return await read_within(reader, candidate, deadline)
    kept = reader.rejecting_snapshot(envelope, candidate)
    if kept is not None:
        return kept
    return await read_within(reader.since(envelope, candidate), candidate, deadline)


async def taken_meanwhile(reader: TargetReader, store: IntakeStore, probe: ReceiptDraft,
                          envelope: Envelope, candidate: WorkCandidate) -> str | None:
    """When a kept snapshot says this version is fresh — another intake of the same version read it
    moments ago and is admitting it — ask the ledger again (one read-only statement) before reading
    the forge: why the version is taken now, or None (then the caller reads as usual).

    The other intake may still be inside its decide transaction, so the ledger is asked a few times
    over at most ``sum(LEDGER_RECHECK_WAITS)`` seconds before giving up; the forge read stays the
    fallback, so a slow ledger costs a read, never a wrong answer. Only for an admission this process
    cannot see (another replica's): one in this process is awaited (``intake/admissions_in_flight.py``).
    Each ledger re-check is counted (``SharedReads.rechecks``)."""
    if not isinstance(reader, SharedReads) or not reader.saw_fresh(envelope, candidate):
        return None
    for wait in LEDGER_RECHECK_WAITS:
        if wait:
            await asyncio.sleep(wait)
        reader.rechecks += 1
        repeat = await look_up(store, probe)
        if repeat.blocking is not None:
            return repeat.blocking
    return None
