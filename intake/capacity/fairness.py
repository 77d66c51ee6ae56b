"""The order in which the deferred queue is admitted: priority aged by waiting time, then fair
between tenants.

Priority alone starves: under a steady flood of priority-2 work, priority-4 work would wait
forever. So every item has an **effective level**::

    level = priority - floor(waited_seconds / aging_seconds)

(``waited_seconds`` = now - enqueued_at): each ``aging_seconds`` of waiting is worth one priority
level, and levels below 1 are allowed (an item keeps rising). Levels are served lowest first.
Within one effective level, tenants take turns (round robin), the tenant with the fewest active
runs first and, on a tie, the one whose oldest item of that level has waited longest; within a
tenant, oldest first. So a tenant that floods the queue gets one admission per turn like
everyone else.

The guarantee (what ``tests/intake/test_fairness_aging.py`` checks): an item of priority ``p``
enqueued at ``t0`` is never at a worse level than an item of priority ``q`` enqueued at or after
``t0 + (p - q) * aging_seconds``; at an equal level it goes first within its tenant, and across
tenants it yields at most one turn of the round robin (a tenant with fewer active runs, or with
an older item at that level). Priorities are 1..5 (``capacity.priority_by_trigger``), so nothing
that arrives more than ``(p - 1) * aging_seconds`` after an item of priority ``p`` is admitted
before it, except through that one turn. At equal age the lower priority number still wins.

``aging_seconds=None`` is the strict order (priority levels never interleave); the capacity
bench runs both side by side.
"""

from __future__ import annotations

import math
from collections import defaultdict, deque
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Mapping, Sequence

DEFAULT_AGING_SECONDS = 120.0
"""``capacity.aging_seconds``' default: two minutes of waiting are worth one priority level."""


@dataclass(frozen=True)
class QueuedItem:
    id: str
    tenant: str
    priority: int
    enqueued_at: datetime


def as_aware(at: datetime) -> datetime:
    """A naive timestamp (SQLite gives them back naive) read as UTC, so it compares with ``now``."""
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def effective_level(item: QueuedItem, now: datetime | None, aging_seconds: float | None) -> int:
    """The item's priority, raised one level per ``aging_seconds`` waited (``None``: not aged)."""
    if aging_seconds is None or now is None:
        return item.priority
    waited = max(0.0, (now - item.enqueued_at).total_seconds())
    return item.priority - math.floor(waited / aging_seconds)


def fair_order(items: Sequence[QueuedItem], active_by_tenant: Mapping[str, int] | None = None, *,
               now: datetime | None = None, aging_seconds: float | None = None) -> list[QueuedItem]:
    """The admission order at ``now``: effective level, then round robin between tenants."""
    if aging_seconds is not None and aging_seconds <= 0:
        raise ValueError("aging_seconds must be positive (None: strict priority)")
    active = dict(active_by_tenant or {})
    out: list[QueuedItem] = []
    by_level: dict[int, list[QueuedItem]] = defaultdict(list)
    for item in items:
        by_level[effective_level(item, now, aging_seconds)].append(item)
    for level in sorted(by_level):
        queues: dict[str, deque[QueuedItem]] = defaultdict(deque)
        for item in sorted(by_level[level], key=lambda i: (i.enqueued_at, i.id)):
            queues[item.tenant].append(item)
        turn = sorted(queues, key=lambda t: (active.get(t, 0), queues[t][0].enqueued_at, t))
        while turn:
            still = []
            for tenant in turn:
                out.append(queues[tenant].popleft())
                if queues[tenant]:
                    still.append(tenant)
            turn = still
    return out
