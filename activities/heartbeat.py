"""Heartbeats: a background beat while awaiting a slow call (``heartbeating``), or beats from the
work itself (``Progress``: the model call and the forge tools), so a dead worker — or a stuck
call — is noticed at the heartbeat timeout.

Without it, a worker killed mid-call is only detected at start-to-close timeout, and
the retry (and its reconcile) waits that long. Heartbeats are also how a cancel arrives: the
server answers a heartbeat with "cancel requested" (the workflow was cancelled, or the attempt
timed out), and the SDK cancels the activity's task, so the awaited call inside this block raises
``asyncio.CancelledError``. The worker sends at most one heartbeat per
``temporal.heartbeat_throttle_seconds``, which bounds how long a cancel takes to land. Cleanup
after a cancel (the model call's budget reservation) runs in a thread that finishes even if the
activity is cancelled again.

``Progress`` folds beats closer together than ``beat_spacing`` (0.5 s, or a quarter of the
heartbeat timeout) into one trailing beat with the newest details: a model call used to hand the SDK
about nine beats (journal, reserve, waiting, one per body chunk, answered), each a task, a payload
encode and a bridge call. Where a held beat goes:

* the work stalls: it is sent when the spacing has passed (then the beats stop), so the heartbeat
  timeout fires as before and the retry sees the last progress made;
* the attempt raises (or is cancelled): :class:`HeldBeatsInterceptor` sends it before the failure
  leaves the activity, so the retry sees the last progress made, as it did before folding (an
  attempt the server already timed out keeps what the server last recorded, as before);
* the attempt returns: it is dropped (its details would reach no one).
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from contextvars import ContextVar
from datetime import timedelta
from typing import Any, AsyncIterator, Callable

from temporalio import activity
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor


@asynccontextmanager
async def _repeating(beat: Callable[[], bool], every_seconds: float) -> AsyncIterator[None]:
    """Call ``beat`` every ``every_seconds`` while inside, until it returns False."""
    async def loop() -> None:
        while beat():
            await asyncio.sleep(every_seconds)

    task = asyncio.create_task(loop())
    try:
        yield
    finally:
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass


def _beat() -> bool:
    activity.heartbeat()
    return True


@asynccontextmanager
async def heartbeating(every_seconds: float = 1.0) -> AsyncIterator[None]:
    async with _repeating(_beat, every_seconds):
        yield


_ATTEMPT_PROGRESS: ContextVar[list["Progress"] | None] = ContextVar("sluicegate_attempt_progress", default=None)
"""The attempt's :class:`Progress` reporters (set by :class:`HeldBeatsInterceptor`)."""

COALESCE_SECONDS = 0.5
"""The longest a progress beat is held back, folded into the next one."""


def beat_spacing(heartbeat_timeout: timedelta | None) -> float:
    """How far apart :class:`Progress` sends beats: ``COALESCE_SECONDS``, or a quarter of the
    heartbeat timeout when that is shorter, so a held-back beat always reaches the SDK well inside
    the timeout. The SDK's core throttles what it sends to the server anyway (at most one per
    0.8 x the heartbeat timeout, capped by ``temporal.heartbeat_throttle_seconds``), keeping the
    newest details: folding here delays what the server sees by at most the spacing."""
    if heartbeat_timeout is None:
        return COALESCE_SECONDS
    return min(COALESCE_SECONDS, heartbeat_timeout.total_seconds() / 4)


class Progress:
    """Heartbeats that mean progress: each :meth:`beat` is sent by the work itself (a body chunk
    received, a page read, a step of the call done) and carries the progress so far as the
    heartbeat details. A call stuck inside its client makes no progress, so it stops heartbeating
    and Temporal's heartbeat timeout fires — the background beat of :func:`heartbeating` would keep
    such a call looking alive until its start-to-close timeout. The last details reach the next
    attempt (``activity.info().heartbeat_details``) and the timeout failure in the history.

    :meth:`waiting` is the one bounded exception: while a request is sent and its answer has not
    begun (the provider is working; nothing can arrive yet) it beats on a timer, for at most
    ``limit_seconds`` (its last beat may be held back one spacing); past that the beats stop and the
    heartbeat timeout decides."""

    def __init__(self, **details: object) -> None:
        info = activity.info()
        self.details: dict[str, object] = {"attempt": info.attempt, **details}
        self._spacing = beat_spacing(info.heartbeat_timeout)
        self._sent_at: float | None = None
        self._trailing: asyncio.TimerHandle | None = None
        if (attempt := _ATTEMPT_PROGRESS.get()) is not None:
            attempt.append(self)

    def beat(self, **details: object) -> None:
        """Record progress. The first beat, and any beat ``beat_spacing`` after the last one sent, is
        sent at once; beats closer together are folded into one trailing beat carrying the newest
        details, sent when the spacing has passed (the SDK encodes every beat it is handed, and a
        model call's streamed body alone makes several a millisecond apart)."""
        self.details.update(details)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not on an event loop (a thread): nothing to fold into
            self._send()
            return
        now = loop.time()
        if self._sent_at is None or now - self._sent_at >= self._spacing:
            self._send(now)
        elif self._trailing is None:
            self._trailing = loop.call_at(self._sent_at + self._spacing, self._send_trailing)

    def flush(self) -> None:
        """Send the beat held back, if any, now (the attempt is failing: the retry reads it)."""
        if self._trailing is not None:
            self._send(asyncio.get_running_loop().time())

    def drop(self) -> None:
        """Forget the beat held back, if any (the attempt returned: no one would read it)."""
        if self._trailing is not None:
            self._trailing.cancel()
            self._trailing = None

    def _send_trailing(self) -> None:
        self._trailing = None
        self._send(asyncio.get_running_loop().time())

    def _send(self, now: float | None = None) -> None:
        if self._trailing is not None:
            self._trailing.cancel()
            self._trailing = None
        self._sent_at = now
        activity.heartbeat(dict(self.details))

    @asynccontextmanager
    async def waiting(self, phase: str, limit_seconds: float, every_seconds: float = 1.0) -> AsyncIterator[None]:
        loop = asyncio.get_running_loop()
        started = loop.time()

        def beat() -> bool:
            waited = loop.time() - started
            if waited >= limit_seconds:
                return False
            self.beat(phase=phase, waited_seconds=round(waited, 1))
            return True

        try:
            async with _repeating(beat, every_seconds):
                yield
        finally:
            self.details.pop("waited_seconds", None)


class _HeldBeatsInbound(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        attempt: list[Progress] = []
        token = _ATTEMPT_PROGRESS.set(attempt)
        try:
            result = await super().execute_activity(input)
        except BaseException:
            for progress in attempt:
                progress.flush()
            raise
        finally:
            _ATTEMPT_PROGRESS.reset(token)
        for progress in attempt:
            progress.drop()
        return result


class HeldBeatsInterceptor(Interceptor):
    """Register on the worker: an attempt that raises sends its :class:`Progress` beats held back
    (the retry's ``heartbeat_details`` are the last progress made); one that returns drops them."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _HeldBeatsInbound(next)
