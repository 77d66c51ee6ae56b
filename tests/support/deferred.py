"""Drive the real dispatcher over the deferred queue until an item leaves it (tests only)."""

from __future__ import annotations

import asyncio

from intake.capacity.dispatch import DispatchReport, dispatch_once
from ledger import DeferredItem, DeferredQueue
from ledger._sql import as_utc, utcnow


async def pass_when_due(queue: DeferredQueue, service, item_id: str, **dispatch) -> DispatchReport:
    """Wait until the item is due (its ``next_attempt_at``), then run one dispatch pass
    (``dispatch``: keyword arguments of :func:`dispatch_once`)."""
    wait = (as_utc(queue.get(item_id).next_attempt_at) - utcnow()).total_seconds()
    if wait > 0:
        await asyncio.sleep(wait + 0.05)
    return await dispatch_once(queue, service, {}, **dispatch)


async def dispatch_until_decided(queue: DeferredQueue, service, item_id: str, passes: int = 40,
                                 **dispatch) -> tuple[DeferredItem, list[DispatchReport]]:
    """Run dispatch passes, each once the item is due, until it is no longer ``waiting``.
    Returns the item as it ended and the passes' reports; fails after ``passes`` passes."""
    reports: list[DispatchReport] = []
    for _ in range(passes):
        item = queue.get(item_id)
        if item.status != "waiting":
            return item, reports
        reports.append(await pass_when_due(queue, service, item_id, **dispatch))
    raise AssertionError(f"deferred item {item_id} still waiting after {passes} passes: {queue.get(item_id)}")
