"""What ``starter.py status`` shows, computed from the ledger (no printing here).

Status that scales: capacity counters are created per tenant and per concurrency key and stay
(at 0) after their runs end, so by default only the non-zero counters are shown, busiest first,
and only the top N rows of each list; :func:`shown` says how many were left out (``--all``
shows everything, zeros too).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from intake.capacity import BreakerView, CapacityPlanner, QueuedItem, breaker_gate, fair_order
from intake.capacity.fairness import DEFAULT_AGING_SECONDS
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


def queue_positions(items: list[DeferredItem], active_by_tenant: dict[str, int], now: datetime | None = None,
                    aging_seconds: float | None = DEFAULT_AGING_SECONDS) -> list[tuple[int, DeferredItem]]:
    """Each waiting item with its 1-based place in the order the dispatcher would admit them now."""
    by_id = {i.id: i for i in items}
    order = fair_order([QueuedItem(i.id, i.tenant, i.priority, as_utc(i.enqueued_at)) for i in items],
                       active_by_tenant, now=now or utcnow(), aging_seconds=aging_seconds)
    return [(n, by_id[q.id]) for n, q in enumerate(order, start=1)]


def counter_limit(key: str, planner: CapacityPlanner) -> int | None:
    """The configured limit of a slot counter (``None``: unlimited), from the same planner intake
    uses. A source's own key limit is not known from the counter's name: the default one is given."""
    if key == "global":
        return planner.global_limit()
    if key.startswith("tenant:"):
        return planner.tenant_limits(key.removeprefix("tenant:")).max_active_runs
    return planner.key_limit("")


def gather(engine, board: BreakerBoard, now: datetime | None = None,
           aging_seconds: float | None = DEFAULT_AGING_SECONDS) -> Status:
    now = now or utcnow()
    capacity = CapacityLedger(engine)
    active = capacity.active_work_by_tenant()
    waiting = DeferredQueue(engine).waiting()
    positions = queue_positions(waiting, {t: len(k) for t, k in active.items()}, now, aging_seconds)
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


DEFAULT_TOP = 20


@dataclass(frozen=True)
class CounterRow:
    key: str
    active: int
    limit: int | None
    """``None``: unlimited."""


@dataclass(frozen=True)
class TenantRuns:
    tenant: str
    runs: int
    work_keys: list[str]


@dataclass
class StatusView:
    """What one ``status`` call shows; ``*_hidden`` counts the rows left out of each list."""

    counters: list[CounterRow]
    counters_hidden: int
    active_by_tenant: list[TenantRuns]
    tenants_hidden: int
    queue: list[TenantQueue]
    queue_hidden: int
    waiting: int
    next_in_line: list[dict[str, Any]]
    breakers: list[BreakerView]
    dead_letters_open: int
    dead_by_owner: dict[str, int]


def top_rows(rows: list, top: int | None) -> tuple[list, int]:
    """The first ``top`` of ``rows`` (``None``: all) and how many were left out."""
    if top is None:
        return rows, 0
    return rows[:top], max(0, len(rows) - top)


def shown(st: Status, planner: CapacityPlanner, top: int | None = DEFAULT_TOP, tenant: str | None = None,
          items: int = 10) -> StatusView:
    """``top=None`` (``--all``): every row, zero counters included; otherwise non-zero counters
    busiest first, tenants by runs and queues by waiting items, ``top`` of each."""
    counters = [CounterRow(k, a, counter_limit(k, planner)) for k, a in st.counters.items()
                if top is None or a > 0]
    counters, counters_hidden = top_rows(sorted(counters, key=lambda c: (-c.active, c.key)), top)
    counters_hidden += 0 if top is None else sum(1 for a in st.counters.values() if a == 0)
    tenants = sorted((TenantRuns(t, len(k), k) for t, k in st.active_by_tenant.items()),
                     key=lambda r: (-r.runs, r.tenant))
    tenants, tenants_hidden = top_rows(tenants, top)
    queue, queue_hidden = top_rows(sorted(st.queue, key=lambda q: (-q.waiting, q.tenant)), top)
    line = [{"position": p, "item": i.id, "tenant": i.tenant, "priority": i.priority, "work_key": i.work_key,
             "input_version": i.input_version, "blocked_on": i.blocked_on, "blocked_key": i.blocked_key,
             "attempts": i.attempts, "next_attempt_at": i.next_attempt_at}
            for p, i in st.positions if tenant is None or i.tenant == tenant][:items]
    return StatusView(counters, counters_hidden, tenants, tenants_hidden, queue, queue_hidden,
                      sum(q.waiting for q in st.queue), line, st.breakers, st.dead_letters_open, st.dead_by_owner)
