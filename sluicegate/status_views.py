"""What ``starter.py status`` shows, computed from the ledger (no printing here)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from datetime import datetime

from intake.capacity import BreakerView, CapacityPlanner, QueuedItem, breaker_gate, fair_order
from ledger import BreakerBoard, CapacityLedger, DeadLetters, DeferredItem, DeferredQueue
from ledger._sql import as_utc, utcnow


@dataclass
class TenantQueue:
    tenant: str
    waiting: int
    oldest_seconds: float
    median_seconds: float
    blocked_on: dict[str, int]
    first_position: int


@dataclass
class Status:
    counters: dict[str, int]
    active_by_tenant: dict[str, list[str]]
    queue: list[TenantQueue]
    positions: list[tuple[int, DeferredItem]]
    breakers: list[BreakerView]
    dead_letters_open: int
    dead_by_owner: dict[str, int] = field(default_factory=dict)


def queue_positions(items: list[DeferredItem], active_by_tenant: dict[str, int]) -> list[tuple[int, DeferredItem]]:
    """Each waiting item with its 1-based place in the order the dispatcher would admit them."""
    by_id = {i.id: i for i in items}
    order = fair_order([QueuedItem(i.id, i.tenant, i.priority, as_utc(i.enqueued_at)) for i in items],
                       active_by_tenant)
    return [(n, by_id[q.id]) for n, q in enumerate(order, start=1)]


def counter_limit(key: str, planner: CapacityPlanner) -> int | None:
    """The configured limit of a slot counter (``None``: unlimited), from the same planner intake
    uses. A source's own key limit is not known from the counter's name: the default one is given."""
    if key == "global":
        return planner.global_limit()
    if key.startswith("tenant:"):
        return planner.tenant_limits(key.removeprefix("tenant:")).max_active_runs
    return planner.key_limit("")


def gather(engine, board: BreakerBoard, now: datetime | None = None) -> Status:
    now = now or utcnow()
    capacity = CapacityLedger(engine)
    active = capacity.active_work_by_tenant()
    waiting = DeferredQueue(engine).waiting()
    positions = queue_positions(waiting, {t: len(k) for t, k in active.items()})
    per_tenant: dict[str, list[tuple[int, DeferredItem]]] = {}
    for pos, item in positions:
        per_tenant.setdefault(item.tenant, []).append((pos, item))
    queue = []
    for tenant, rows in sorted(per_tenant.items()):
        ages = [(now - as_utc(i.enqueued_at)).total_seconds() for _, i in rows]
        blocked: dict[str, int] = {}
        for _, i in rows:
            blocked[i.blocked_on] = blocked.get(i.blocked_on, 0) + 1
        queue.append(TenantQueue(tenant, len(rows), max(ages), statistics.median(ages), blocked,
                                 min(p for p, _ in rows)))
    letters = DeadLetters(engine).list("open", limit=10_000)
    owners: dict[str, int] = {}
    for letter in letters:
        owners[letter.owner] = owners.get(letter.owner, 0) + 1
    views = [breaker_gate(st, now, board.policy) for st in board.states()]
    return Status(capacity.counters(), active, queue, positions, views, len(letters), owners)
