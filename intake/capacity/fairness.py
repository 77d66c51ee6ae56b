"""The order in which the deferred queue is admitted: priority first, then fair between tenants.

Within one priority level, tenants take turns (round robin), the tenant with the fewest
active runs first and, on a tie, the one whose oldest item has waited longest; within a
tenant, oldest first. So a tenant that floods the queue gets one admission per turn like
everyone else: a steady tenant's wait is bounded by the number of tenants ahead of it,
not by the flood's size.
"""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass
from datetime import datetime
from typing import Mapping, Sequence


@dataclass(frozen=True)
class QueuedItem:
    id: str
    tenant: str
    priority: int
    enqueued_at: datetime


def fair_order(items: Sequence[QueuedItem], active_by_tenant: Mapping[str, int] | None = None) -> list[QueuedItem]:
    active = dict(active_by_tenant or {})
    out: list[QueuedItem] = []
    by_level: dict[int, list[QueuedItem]] = defaultdict(list)
    for item in items:
        by_level[item.priority].append(item)
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
