"""The deferred queue: work refused for capacity waits here, durably, for the dispatcher.

One ``waiting`` item per (tenant, work key), enforced by the database (a partial unique index,
migration 0014): a newer version of queued work replaces the queued version in place (keeping
its place in line); the same version again is a duplicate. Two transactions queueing one key at
once (PostgreSQL) do not both insert: the loser's insert meets the index, and it merges into
the winner's item instead. An event emitted before the queued one's does not replace it.
Items leave the queue ``admitted``, ``dropped`` (rejected when re-checked: stale,
closed), ``superseded`` (a newer version was admitted directly, or the same version by a later
delivery that could read the source the item was waiting on) or ``dead`` (failed to
dispatch too often: a poison item goes to the dead letters instead of blocking the line).

Clock: ``enqueued_at`` (aging, FIFO), ``next_attempt_at`` (backoff) and the "now" they are
compared with all come from the database's clock (:func:`db_now`), not from the API replica or
the dispatcher that happens to run the statement: replicas whose clocks disagree would otherwise
age one replica's items faster and let a fast clock's item jump the line. On PostgreSQL it is the
server's ``now()`` (the transaction's start); SQLite is a file on one host, so its clock is the
host's, the same for every process. Limit: ``updated_at`` and the rest of the ledger still use
the process clock.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, NamedTuple

from sqlalchemy import Select, bindparam, case, func, or_, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col

from intake.capacity import Block, CapacityRequest
from intake.capacity.payload import emitted_later
from ledger._capacity_models import DeferredItem
from ledger._dead_letters import DeadLetters
from ledger._engine import single_read
from ledger._prepared import Prepared
from ledger._sql import new_id, utcnow

SLOT_BLOCKS = (str(Block.GLOBAL), str(Block.TENANT), str(Block.KEY))
"""Waiting for a slot: due whenever a pass runs (a run's end frees one); the others wait out their time."""


def db_now(s: Session) -> datetime:
    """The database's clock (PostgreSQL ``now()``, UTC); SQLite's is this host's."""
    if s.get_bind().dialect.name != "postgresql":
        return utcnow()
    return s.execute(select(func.now())).scalar_one()


def waiting_for(s: Session, tenant: str, work_key: str, lock: bool = False) -> DeferredItem | None:
    query = select(DeferredItem).where(col(DeferredItem.tenant) == tenant, col(DeferredItem.work_key) == work_key,
                                       col(DeferredItem.status) == "waiting")
    return s.execute(query.with_for_update() if lock else query).scalars().first()


TENANT_BLOCKS = (str(Block.TENANT), str(Block.QUOTA))


class WaitingRow(NamedTuple):
    id: str
    input_version: str | None
    blocked_on: str


class AheadRow(NamedTuple):
    work_key: str
    blocked_on: str
    blocked_key: str | None


_TABLE = DeferredItem.__table__  # type: ignore[attr-defined]  # set on table models; not in SQLModel's types
_WAITING_ROW = select(_TABLE.c.id, _TABLE.c.input_version, _TABLE.c.blocked_on).where(
    _TABLE.c.tenant == bindparam("tenant"), _TABLE.c.work_key == bindparam("wk"), _TABLE.c.status == "waiting")
_WAITING_ROW_LOCKED = _WAITING_ROW.with_for_update()
_ANY_WAITING = select(_TABLE.c.id).where(_TABLE.c.status == "waiting").limit(1)


def _ahead_row(keys: int) -> Select[Any]:
    """The queue-ahead read for ``keys`` concurrency keys (``k0``, ``k1``...: no expanding parameter on the
    cursor; with none, no item waiting on a key can be ahead: that branch is left out)."""
    ahead = [_TABLE.c.blocked_on == str(Block.GLOBAL),
             (_TABLE.c.tenant == bindparam("tenant")) & _TABLE.c.blocked_on.in_(
                 [bindparam(f"t{i}", block) for i, block in enumerate(TENANT_BLOCKS)]),
             (_TABLE.c.blocked_on == str(Block.RATE)) & (_TABLE.c.blocked_key == bindparam("bucket"))]
    if keys:
        ahead.append((_TABLE.c.blocked_on == str(Block.KEY))
                     & _TABLE.c.blocked_key.in_([bindparam(f"k{i}", type_=_TABLE.c.blocked_key.type) for i in range(keys)]))
    return select(_TABLE.c.work_key, _TABLE.c.blocked_on, _TABLE.c.blocked_key).where(
        _TABLE.c.status == "waiting", or_(*ahead)).order_by(_TABLE.c.enqueued_at).limit(1)


_AHEAD_ROW = {n: Prepared(_ahead_row(n)) for n in range(3)}
"""The accept path's two queue reads as statements built once (as ``ledger/_accept_sql.py``) and run on the
DBAPI cursor (``ledger/_prepared.py``): the same SQL as :func:`waiting_for`'s (and as the ORM form of the
queue-ahead read emitted), only the columns the capacity step reads. The queue-ahead read is built per
number of concurrency keys (a request names at most one today; more are built on first use)."""
_WAITING, _WAITING_LOCKED = Prepared(_WAITING_ROW), Prepared(_WAITING_ROW_LOCKED)


def waiting_row(s: Session, tenant: str, work_key: str, lock: bool = False) -> WaitingRow | None:
    """:func:`waiting_for`'s item as (id, input_version, blocked_on); locked with ``lock``."""
    row = (_WAITING_LOCKED if lock else _WAITING).first(s, {"tenant": tenant, "wk": work_key})
    return None if row is None else WaitingRow(*row)


def queue_ahead(s: Session, tenant: str, slot_keys: tuple[str, ...] = (),
                rate_bucket: str | None = None) -> AheadRow | None:
    """A waiting item (work_key, blocked_on, blocked_key) that new work must not overtake
    because it waits on a limit the new work needs too: the global slot limit (any tenant), the same tenant's active-run or day limit,
    the same rate bucket, or the same concurrency key. Items waiting on another repository's
    key, another source's bucket or an unreadable source do not hold the newcomer back, nor do
    items waiting on a breaker (the caller checks the breaker's state now: a closed breaker
    must not keep deferring work behind items it once blocked)."""
    keys = [k for k in slot_keys if k.startswith("key:")]
    statement = _AHEAD_ROW.get(len(keys))
    if statement is None:
        statement = _AHEAD_ROW[len(keys)] = Prepared(_ahead_row(len(keys)))
    row = statement.first(s, {"tenant": tenant, "bucket": rate_bucket or "", **{f"k{i}": k for i, k in enumerate(keys)}})
    return None if row is None else AheadRow(*row)


def enqueue(s: Session, *, tenant: str, source: str, work_key: str, input_version: str | None,
            request: CapacityRequest, block: Block, blocked_key: str | None, retry_after: float,
            receipt_id: str, payload: dict[str, Any], now: datetime | None = None) -> DeferredItem:
    now = now or db_now(s)
    due = now + timedelta(seconds=retry_after)
    item = waiting_for(s, tenant, work_key, lock=True)
    if item is None:
        fresh = DeferredItem(id=new_id(), enqueued_at=now, updated_at=now, tenant=tenant, source=source,
                             priority=request.priority, work_key=work_key, input_version=input_version,
                             status="waiting", blocked_on=str(block), blocked_key=blocked_key, next_attempt_at=due,
                             attempts=0, failures=0, receipt_id=receipt_id, payload=payload)
        try:
            with s.begin_nested():  # the unique index decides a race; only this savepoint is undone
                s.add(fresh)
            return fresh
        except IntegrityError:
            item = waiting_for(s, tenant, work_key, lock=True)  # the concurrent winner, committed now
            if item is None:
                raise
    item.priority = min(item.priority, request.priority)
    item.updated_at = now
    if not emitted_later(item.payload, payload):  # a newer version replaces the queued one, keeps its place
        item.input_version, item.payload, item.receipt_id = input_version, payload, receipt_id
        item.blocked_on, item.blocked_key, item.next_attempt_at = str(block), blocked_key, due
    s.add(item)
    s.flush()
    return item


def redefer(s: Session, item_id: str, block: Block, blocked_key: str | None, retry_after: float) -> None:
    now = db_now(s)
    s.execute(update(DeferredItem).where(col(DeferredItem.id) == item_id).values(
        blocked_on=str(block), blocked_key=blocked_key, next_attempt_at=now + timedelta(seconds=retry_after),
        attempts=col(DeferredItem.attempts) + 1, updated_at=now))


def finish(s: Session, item_id: str, status: str, receipt_id: str | None, note: str | None = None) -> None:
    s.execute(update(DeferredItem).where(col(DeferredItem.id) == item_id, col(DeferredItem.status) == "waiting").values(
        status=status, final_receipt_id=receipt_id, last_error=note, updated_at=utcnow(),
        attempts=col(DeferredItem.attempts) + 1))


class DeferredQueue:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def due(self, limit: int = 500, now: datetime | None = None) -> list[DeferredItem]:
        """Due items, taken per tenant: each tenant's share ``max(1, limit // tenants)``, so a flood of
        one tenant cannot fill the window a fair pass sees (with more tenants than ``limit`` every
        tenant still gets its first item in). The share is half the best by priority (then age) and
        half the oldest, so an item aged past its priority (``fair_order``'s aging) is in the window
        even behind a long line of higher-priority work; a share of 1 takes one of each."""
        slot_ready = col(DeferredItem.blocked_on).in_(SLOT_BLOCKS) & (col(DeferredItem.failures) == 0)  # else: backoff
        with Session(self._engine, expire_on_commit=False) as s:
            now = now or db_now(s)
            due = (col(DeferredItem.status) == "waiting") & or_(col(DeferredItem.next_attempt_at) <= now, slot_ready)
            tenants = s.execute(select(func.count(func.distinct(col(DeferredItem.tenant)))).where(due)).scalar() or 0
            if tenants == 0:
                return []
            per_tenant = max(1, limit // tenants)
            # Items waiting on one concurrency key form their own line within the tenant, so a busy
            # repository's backlog cannot fill the tenant's whole share of the window.
            line = case((col(DeferredItem.blocked_on) == str(Block.KEY), col(DeferredItem.blocked_key)), else_="")
            by_priority = func.row_number().over(partition_by=(col(DeferredItem.tenant), line), order_by=(
                col(DeferredItem.priority), col(DeferredItem.enqueued_at), col(DeferredItem.id))).label("by_priority")
            by_age = func.row_number().over(partition_by=(col(DeferredItem.tenant), line), order_by=(
                col(DeferredItem.enqueued_at), col(DeferredItem.id))).label("by_age")
            ranked = select(col(DeferredItem.id), by_priority, by_age).where(due).subquery()
            oldest = max(1, per_tenant // 2)
            ids = select(ranked.c.id).where(or_(ranked.c.by_priority <= max(1, per_tenant - oldest),
                                                ranked.c.by_age <= oldest))
            return list(s.execute(select(DeferredItem).where(col(DeferredItem.id).in_(ids))
                                  .order_by(col(DeferredItem.priority), col(DeferredItem.enqueued_at))).scalars())

    def any_waiting(self) -> bool:
        """Is any item waiting (due or not)? One prebuilt statement on a ``single_read`` connection (no
        write lock): with none, a dispatch pass has nothing to do (``activities.capacity_activities``
        skips the one a release would run)."""
        with single_read(self._engine) as conn:
            return conn.execute(_ANY_WAITING).first() is not None

    def now(self) -> datetime:
        """The database's clock, for the dispatcher's aging (``enqueued_at`` is on it too)."""
        with Session(self._engine) as s:
            return db_now(s)

    def waiting(self) -> list[DeferredItem]:
        with Session(self._engine, expire_on_commit=False) as s:
            return list(s.execute(select(DeferredItem).where(col(DeferredItem.status) == "waiting")
                                  .order_by(col(DeferredItem.enqueued_at))).scalars())

    def get(self, item_id: str) -> DeferredItem | None:
        with Session(self._engine, expire_on_commit=False) as s:
            return s.get(DeferredItem, item_id)

    def note_failure(self, item_id: str, error: str, max_failures: int, retry_after: float) -> bool:
        """Record a dispatch failure; past ``max_failures`` the item is ``dead``. Returns True if dead."""
        with Session(self._engine) as s, s.begin():
            item = s.get(DeferredItem, item_id, with_for_update=True)
            if item is None or item.status != "waiting":
                return False
            item.failures += 1
            item.last_error = error[:2000]
            item.updated_at = utcnow()
            item.next_attempt_at = db_now(s) + timedelta(seconds=retry_after * item.failures)
            if item.failures >= max_failures:
                item.status = "dead"
            s.add(item)
            return item.status == "dead"

    def requeue(self, item_id: str, block: Block, retry_after: float, error: str) -> None:
        """The item could not be re-checked now (its source is down): try again later, no failure counted."""
        with Session(self._engine) as s, s.begin():
            redefer(s, item_id, block, None, retry_after)
            s.execute(update(DeferredItem).where(col(DeferredItem.id) == item_id).values(last_error=error[:2000]))

    def counts(self) -> dict[tuple[str, str], int]:
        with Session(self._engine) as s:
            rows = s.execute(select(col(DeferredItem.tenant), col(DeferredItem.status), func.count())
                             .group_by(col(DeferredItem.tenant), col(DeferredItem.status)))
            return {(t, st): n for t, st, n in rows}


class PoisonLetters:
    """Dead letters for deferred items that could not be dispatched (the dispatcher's port)."""

    def __init__(self, engine: Engine, owner_for) -> None:
        self._engine = engine
        self._owner_for = owner_for

    def poison(self, item: DeferredItem, error: str) -> None:
        outcome = {"work_key": item.work_key, "input_version": item.input_version or "-", "generation": 0,
                   "tenant": item.tenant, "source": item.source, "reason": "deferred-dispatch-failed",
                   "last_error": f"deferred item {item.id}: {error}"[:2000], "retries": item.failures + 1}
        with Session(self._engine) as s, s.begin():
            DeadLetters(self._engine).record(s, outcome, self._owner_for(item.tenant, item.source), None)
