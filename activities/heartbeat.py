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
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from typing import AsyncIterator, Callable

from temporalio import activity


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


class Progress:
    """Heartbeats that mean progress: each :meth:`beat` is sent by the work itself (a body chunk
    received, a page read, a step of the call done) and carries the progress so far as the
    heartbeat details. A call stuck inside its client makes no progress, so it stops heartbeating
    and Temporal's heartbeat timeout fires — the background beat of :func:`heartbeating` would keep
    such a call looking alive until its start-to-close timeout. The last details reach the next
    attempt (``activity.info().heartbeat_details``) and the timeout failure in the history.

    :meth:`waiting` is the one bounded exception: while a request is sent and its answer has not
    begun (the provider is working; nothing can arrive yet) it beats on a timer, for at most
    ``limit_seconds``; past that the beats stop and the heartbeat timeout decides."""

    def __init__(self, **details: object) -> None:
        self.details: dict[str, object] = {"attempt": activity.info().attempt, **details}

    def beat(self, **details: object) -> None:
        self.details.update(details)
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
