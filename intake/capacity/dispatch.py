"""The dispatcher: admit deferred work as capacity frees, fairly, without letting poison block it.

One pass: take the due items, put them in :func:`fair_order` (priority aged by waiting time,
``aging_seconds``), and decide each again
through the intake service (freshness, policy, capacity — exactly as a new delivery).
A global refusal ends the pass (nothing else can fit); a tenant, quota or rate refusal
skips that tenant's remaining items; a concurrency-key refusal skips items blocked on
the same key. An item whose payload cannot be read, or whose dispatch raises, counts a
failure; after ``max_failures`` it is ``dead`` and goes to the dead letters. An item in a killed
scope (:class:`~intake.kill_gate.HeldByKill`) is ``held``: left queued as it is, no forge read, no
failure counted, so the pass after the unkill decides it.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Protocol, Sequence, TypeVar

from intake.capacity.fairness import DEFAULT_AGING_SECONDS, QueuedItem, as_aware, fair_order
from intake.capacity.plan import Block, CapacityPlanner
from intake.decision import Outcome
from sluicegate.errors import SluicegateError

if TYPE_CHECKING:  # the service raises Requeue from this module
    from intake.service import IntakeService

log = logging.getLogger("sluicegate.dispatch")
TENANT_BLOCKS = {str(Block.TENANT), str(Block.QUOTA)}
GLOBAL_BLOCKS = {str(b) for b in Block if b.affects_everyone}


class Queued(Protocol):
    id: str
    tenant: str
    priority: int
    enqueued_at: Any
    work_key: str
    blocked_on: str
    blocked_key: str | None
    payload: dict[str, Any]
    attempts: int
    receipt_id: str


Q = TypeVar("Q", bound=Queued)
Q_co = TypeVar("Q_co", bound=Queued, covariant=True)
Q_contra = TypeVar("Q_contra", bound=Queued, contravariant=True)


class QueuePort(Protocol[Q_co]):
    """The deferred queue, over its own item type (the ledger's ``DeferredItem``)."""

    def due(self, limit: int = 500) -> Sequence[Q_co]: ...
    def now(self) -> datetime:
        """The clock ``enqueued_at`` was written with (the database's), for aging."""
        ...
    def get(self, item_id: str) -> Q_co | None: ...
    def note_failure(self, item_id: str, error: str, max_failures: int, retry_after: float) -> bool: ...
    def requeue(self, item_id: str, block: Block, retry_after: float, error: str) -> None: ...


class DeadLetterPort(Protocol[Q_contra]):
    """Where an item that keeps failing goes: it takes the queue's own item type."""

    def poison(self, item: Q_contra, error: str) -> None: ...


class RoomCheck:
    """Skip an item that cannot fit before spending a forge read on it.

    The counters are read once per pass and kept up to date with this pass's admissions; a
    run ending during the pass is picked up by the pass its release triggers. The gate in the
    ledger stays the authority: this only avoids re-deciding items bound to be refused.
    """

    def __init__(self, counters: Mapping[str, int], planner: CapacityPlanner) -> None:
        self._counters = dict(counters)
        self._planner = planner

    def _keys(self, item: Queued) -> list[tuple[str, int | None, Block]]:
        keys = [("global", self._planner.global_limit(), Block.GLOBAL),
                (f"tenant:{item.tenant}", self._planner.tenant_limits(item.tenant).max_active_runs, Block.TENANT)]
        if item.blocked_key and item.blocked_key.startswith("key:"):
            keys.append((item.blocked_key, self._planner.key_limit(getattr(item, "source", "")), Block.KEY))
        return keys

    def full(self, item: Queued) -> Block | None:
        for key, limit, block in self._keys(item):
            if limit is not None and self._counters.get(key, 0) >= limit:
                return block
        return None

    def admitted(self, item: Queued) -> None:
        for key, _, _ in self._keys(item):
            self._counters[key] = self._counters.get(key, 0) + 1


class Requeue(SluicegateError):
    """A deferred item could not be re-checked now (source unreadable): it stays queued."""

    def __init__(self, block: Block, retry_after: float, message: str) -> None:
        super().__init__(message)
        self.block, self.retry_after = block, retry_after


@dataclass
class DispatchReport:
    admitted: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    deferred: int = 0
    skipped: int = 0
    held: list[str] = field(default_factory=list)
    """Work keys left queued because a kill covers them."""
    dead: list[str] = field(default_factory=list)
    stopped_on: str | None = None


async def dispatch_once(queue: QueuePort[Q], service: IntakeService, active_by_tenant: Mapping[str, int], *,
                        dead_letters: DeadLetterPort[Q] | None = None, batch: int = 200, max_failures: int = 5,
                        retry_after: float = 30.0, room: RoomCheck | None = None,
                        aging_seconds: float | None = DEFAULT_AGING_SECONDS) -> DispatchReport:
    from intake.kill_gate import HeldByKill

    report = DispatchReport()
    items = {i.id: i for i in await asyncio.to_thread(queue.due, batch)}
    now = as_aware(await asyncio.to_thread(queue.now)) if items else None  # the clock enqueued_at is on
    order = fair_order([QueuedItem(i.id, i.tenant, i.priority, as_aware(i.enqueued_at)) for i in items.values()],
                       active_by_tenant, now=now, aging_seconds=aging_seconds)
    tenants_full: set[str] = set()
    keys_full: set[str | None] = set()
    for q in order:
        item = items[q.id]
        if item.tenant in tenants_full or (item.blocked_key and item.blocked_key in keys_full):
            report.skipped += 1
            continue
        known_full = room.full(item) if room is not None else None
        if known_full == Block.GLOBAL:
            report.stopped_on = str(known_full)
            break
        if known_full is not None:
            (tenants_full.add(item.tenant) if known_full == Block.TENANT else keys_full.add(item.blocked_key))
            report.skipped += 1
            continue
        try:
            decision = await service.resume(item.id, item.payload, item.receipt_id, getattr(item, "attempts", 0))
        except HeldByKill:
            report.held.append(item.work_key)
            continue
        except Requeue as wait:
            await asyncio.to_thread(queue.requeue, item.id, wait.block, wait.retry_after, str(wait))
            report.deferred += 1
            continue
        except Exception as exc:  # noqa: BLE001 - poison or a bug: count it, never block the line
            error = f"{type(exc).__name__}: {exc}"
            log.warning("deferred item %s failed to dispatch: %s", item.id, error, extra={"work_key": item.work_key})
            if await asyncio.to_thread(queue.note_failure, item.id, error, max_failures, retry_after):
                report.dead.append(item.id)
                if dead_letters is not None:
                    await asyncio.to_thread(dead_letters.poison, item, error)
            continue
        if decision.outcome == Outcome.ACCEPT:
            report.admitted.append(item.work_key)
            if room is not None:
                room.admitted(item)
        elif decision.outcome != Outcome.DEFER:
            report.dropped.append(item.work_key)
        else:
            report.deferred += 1
            row = await asyncio.to_thread(queue.get, item.id)
            blocked_on = row.blocked_on if row is not None else str(Block.GLOBAL)
            if blocked_on in GLOBAL_BLOCKS:
                report.stopped_on = blocked_on
                break
            if blocked_on in TENANT_BLOCKS:
                tenants_full.add(item.tenant)
            elif row is not None and row.blocked_key:
                keys_full.add(row.blocked_key)
    return report
