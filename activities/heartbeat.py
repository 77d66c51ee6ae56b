"""Heartbeat while awaiting a slow call, so a dead worker is noticed within the heartbeat timeout.

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
from typing import AsyncIterator

from temporalio import activity


@asynccontextmanager
async def heartbeating(every_seconds: float = 1.0) -> AsyncIterator[None]:
    async def beat() -> None:
        while True:
            activity.heartbeat()
            await asyncio.sleep(every_seconds)

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
