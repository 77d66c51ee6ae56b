"""Heartbeat while awaiting a slow call, so a dead worker is noticed within the heartbeat timeout.

Without it, a worker killed mid-call is only detected at start-to-close timeout, and
the retry (and its reconcile) waits that long.
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
