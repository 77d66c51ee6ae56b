"""Taking and giving back capacity, inside the ledger transaction that decides the admission.

``acquire`` runs in the decide transaction: every counter the run needs is raised with one
conditional upsert, ``INSERT … ON CONFLICT DO UPDATE SET active = active + 1 WHERE active < limit
RETURNING`` (atomic on SQLite and PostgreSQL; a limit below 1 takes the older ensure-then-``UPDATE``
pair; counters are always raised in key order, so two admissions never deadlock), then the day
quota the same way, then a rate-bucket token. If any step is
refused, the steps before it are undone in the same transaction and
:class:`CapacityRefused` says which limit and for how long. A work key that already
holds its slots (a newer version superseding a running one) reuses them.

The statements of the decide path (counters, quota, rate bucket, holds) are SQLAlchemy Core
statements built once at import and executed with parameter dicts, as ``ledger/_kills.py`` and
``ledger/_plain_decide.py`` do: building ORM expressions per call cost several times the
database's own work (profiled: the acquire was 11% of the webhook API's samples with the limits
lifted). Same order of rows and locks as the ORM form it replaced; since session 10 a counter and the
day quota take one statement each instead of two (the accept's transaction: 21 statements → 17). Since
session 11 the accept's statements run on the DBAPI cursor (``ledger/_prepared.py``): the same SQL,
compiled once by SQLAlchemy, without its per-execution machinery.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import bindparam, delete, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from intake.capacity import Block, CapacityRequest, take_token
from ledger._capacity_models import AdmissionCount, CapacityCounter, CapacityHold, RateBucket
from ledger._prepared import Prepared
from ledger._sql import as_utc, rowcount, utcnow
from sluicegate.errors import SluicegateError


class CapacityRefused(SluicegateError):
    def __init__(self, block: Block, key: str | None, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.block, self.key, self.retry_after = block, key, retry_after


_COUNTERS = CapacityCounter.__table__  # type: ignore[attr-defined]  # set on table models; not in SQLModel's types
_QUOTAS = AdmissionCount.__table__  # type: ignore[attr-defined]
_HOLDS = CapacityHold.__table__  # type: ignore[attr-defined]
_BUCKETS = RateBucket.__table__  # type: ignore[attr-defined]
_DIALECTS = (("sqlite", sqlite), ("postgresql", postgresql))

_COUNTER_ENSURE = {name: d.insert(_COUNTERS).on_conflict_do_nothing() for name, d in _DIALECTS}
"""``INSERT (key, active 0, updated_at) ... ON CONFLICT DO NOTHING``: the counter row exists."""
_COUNTER_TAKE = {name: d.insert(_COUNTERS).values(key=bindparam("k"), active=1, updated_at=bindparam("now"))
                 .on_conflict_do_update(index_elements=["key"],
                                        set_={"active": _COUNTERS.c.active + 1, "updated_at": bindparam("now")},
                                        where=_COUNTERS.c.active < bindparam("lim"))
                 .returning(_COUNTERS.c.active) for name, d in _DIALECTS}
"""One statement for a limit of at least 1: a new counter row at 1, or the existing one raised if under the
limit (``ON CONFLICT DO UPDATE ... WHERE``: no row changed, so none returned, when it is at the limit; RETURNING,
not the row count, which psycopg does not report for an upsert). The same rows, in the
same key order, and the same end state as :data:`_COUNTER_ENSURE` then :data:`_COUNTER_RAISE`, one statement
fewer per slot. One difference, PostgreSQL only: a counter at its limit is now locked by the refused
transaction too (``DO UPDATE`` locks the row it conflicts with even when its ``WHERE`` is false) until that
transaction (which queues the work) commits; the order of locks is unchanged, so no new deadlock."""
_COUNTER_RAISE = update(_COUNTERS).where(_COUNTERS.c.key == bindparam("k"), _COUNTERS.c.active < bindparam("lim")) \
    .values(active=_COUNTERS.c.active + 1, updated_at=bindparam("now"))
_COUNTER_LOWER = update(_COUNTERS).where(_COUNTERS.c.key == bindparam("k"), _COUNTERS.c.active > 0) \
    .values(active=_COUNTERS.c.active - 1, updated_at=bindparam("now"))
_QUOTA_ENSURE = {name: d.insert(_QUOTAS).on_conflict_do_nothing() for name, d in _DIALECTS}
_QUOTA_TAKE = {name: d.insert(_QUOTAS).values({"tenant": bindparam("t"), "day": bindparam("d"), "count": 1})
               .on_conflict_do_update(index_elements=["tenant", "day"], set_={"count": _QUOTAS.c["count"] + 1},
                                      where=_QUOTAS.c["count"] < bindparam("lim"))
               .returning(_QUOTAS.c["count"]) for name, d in _DIALECTS}
"""The day quota's :data:`_COUNTER_TAKE`: one statement instead of ensure-then-raise (a limit of at least 1)."""
_QUOTA_RAISE = update(_QUOTAS).where(_QUOTAS.c.tenant == bindparam("t"), _QUOTAS.c.day == bindparam("d"),
                                     _QUOTAS.c["count"] < bindparam("lim")).values({"count": _QUOTAS.c["count"] + 1})
_QUOTA_LOWER = update(_QUOTAS).where(_QUOTAS.c.tenant == bindparam("t"), _QUOTAS.c.day == bindparam("d"),
                                     _QUOTAS.c["count"] > 0).values({"count": _QUOTAS.c["count"] - 1})
_HOLDS_OF = select(_HOLDS.c.slot_key).where(_HOLDS.c.work_key == bindparam("wk")).with_for_update()
_HOLD_INSERT = _HOLDS.insert()
_STAMP = update(_HOLDS).where(_HOLDS.c.work_key == bindparam("wk")).values(generation=bindparam("gen"))
_BUCKET_OF = select(_BUCKETS.c.tokens, _BUCKETS.c.updated_at).where(_BUCKETS.c.key == bindparam("k")).with_for_update()
_BUCKET_INSERT = _BUCKETS.insert()
_BUCKET_SET = update(_BUCKETS).where(_BUCKETS.c.key == bindparam("k")).values(tokens=bindparam("left"),
                                                                               updated_at=bindparam("now"))
_TAKE_SLOT, _TAKE_QUOTA, _LOWER_SLOT, _LOWER_QUOTA = (Prepared(_COUNTER_TAKE), Prepared(_QUOTA_TAKE),
                                                      Prepared(_COUNTER_LOWER), Prepared(_QUOTA_LOWER))
_HOLDS_LOCKED, _ADD_HOLDS, _STAMP_HOLDS = Prepared(_HOLDS_OF), Prepared(_HOLD_INSERT), Prepared(_STAMP)
_BUCKET_LOCKED, _ADD_BUCKET, _SET_BUCKET = Prepared(_BUCKET_OF), Prepared(_BUCKET_INSERT), Prepared(_BUCKET_SET)
"""The statements above on the DBAPI cursor (``ledger/_prepared.py``), for the accept's transaction."""


def _raise_slot(s: Session, key: str, limit: int) -> bool:
    now = utcnow()
    if limit >= 1:  # the common case in one statement (a new row starts at 1, under any such limit)
        return _TAKE_SLOT.first(s, {"k": key, "lim": limit, "now": now}) is not None
    s.execute(_COUNTER_ENSURE[s.get_bind().dialect.name], {"key": key, "active": 0, "updated_at": now})
    return rowcount(s.execute(_COUNTER_RAISE, {"k": key, "lim": limit, "now": now})) == 1


def _lower_slot(s: Session, key: str) -> None:
    _LOWER_SLOT.run(s, {"k": key, "now": utcnow()})


def _raise_quota(s: Session, tenant: str, day: str, limit: int) -> bool:
    if limit >= 1:
        return _TAKE_QUOTA.first(s, {"t": tenant, "d": day, "lim": limit}) is not None
    s.execute(_QUOTA_ENSURE[s.get_bind().dialect.name], {"tenant": tenant, "day": day, "count": 0})
    return rowcount(s.execute(_QUOTA_RAISE, {"t": tenant, "d": day, "lim": limit})) == 1


def _lower_quota(s: Session, tenant: str, day: str) -> None:
    _LOWER_QUOTA.run(s, {"t": tenant, "d": day})


def holds_slots(s: Session, work_key: str) -> bool:
    """Does ``work_key``'s run hold slots? Locks them (PostgreSQL), so a release committing meanwhile
    is waited for and seen: a newer generation never "reuses" slots that were just given back."""
    return _HOLDS_LOCKED.first(s, {"wk": work_key}) is not None


def acquire(s: Session, work_key: str, req: CapacityRequest, now: datetime | None = None,
            holds_checked: bool = False) -> None:
    """Take the request's slots, quota and rate token for ``work_key`` or raise CapacityRefused.
    ``holds_checked``: the caller already asked :func:`holds_slots` in this transaction (and locked
    the holds): it is not asked again."""
    now = now or utcnow()
    if not holds_checked and holds_slots(s, work_key):
        return
    taken: list[str] = []
    for claim in sorted(req.slots, key=lambda c: c.key):
        if not _raise_slot(s, claim.key, claim.limit):
            for key in taken:
                _lower_slot(s, key)
            raise CapacityRefused(claim.block, claim.key, f"{claim.key} has {claim.limit} active run(s), its limit")
        taken.append(claim.key)
    day = now.date().isoformat()
    try:
        if req.day_quota is not None and not _raise_quota(s, req.tenant, day, req.day_quota):
            midnight = datetime.combine(now.date() + timedelta(days=1), datetime.min.time(), now.tzinfo)
            raise CapacityRefused(Block.QUOTA, f"quota:{req.tenant}",
                                  f"tenant {req.tenant} used its {req.day_quota} admissions for {day}",
                                  (midnight - now).total_seconds())
        if req.rate is not None:
            _take_rate_token(s, req, now)
    except CapacityRefused as refused:
        for key in taken:
            _lower_slot(s, key)
        if refused.block == Block.RATE and req.day_quota is not None:
            _lower_quota(s, req.tenant, day)
        raise
    if taken:
        _ADD_HOLDS.run_many(s, [{"work_key": work_key, "slot_key": key, "tenant": req.tenant, "generation": 0,
                                  "acquired_at": now} for key in taken])


def _take_rate_token(s: Session, req: CapacityRequest, now: datetime) -> None:
    rate = req.rate
    assert rate is not None  # acquire takes a token only for a request with a rate
    row = _BUCKET_LOCKED.first(s, {"k": rate.bucket})
    if row is None:
        taken, left, wait = take_token(rate.burst, 0.0, rate)
        _ADD_BUCKET.run(s, {"key": rate.bucket, "tokens": left, "updated_at": now})
    else:
        tokens, updated_at = row
        taken, left, wait = take_token(tokens, (now - as_utc(updated_at)).total_seconds(), rate)
        if taken:
            _SET_BUCKET.run(s, {"k": rate.bucket, "left": left, "now": now})
    if not taken:
        raise CapacityRefused(Block.RATE, rate.bucket,
                              f"{rate.bucket} allows {rate.per_second:g}/s (burst {rate.burst:g})", wait)


def stamp_generation(s: Session, work_key: str, generation: int) -> None:
    _STAMP_HOLDS.run(s, {"wk": work_key, "gen": generation})


class CapacityLedger:
    """Release, inspection and the reaper's view of held slots."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def release(self, work_key: str, up_to_generation: int | None = None) -> list[str]:
        """Give back the slots ``work_key`` holds (only those taken at or before ``up_to_generation``)."""
        with Session(self._engine) as s, s.begin():
            query = select(CapacityHold).where(col(CapacityHold.work_key) == work_key)
            if up_to_generation is not None:
                query = query.where(col(CapacityHold.generation) <= up_to_generation)
            # counters lowered in key order, as acquire raises them: since a refused take locks the
            # counter row too (PostgreSQL, one upsert), any other order could deadlock with it
            holds = list(s.execute(query.order_by(col(CapacityHold.slot_key)).with_for_update()).scalars())
            for hold in holds:
                _lower_slot(s, hold.slot_key)
                s.execute(delete(CapacityHold).where(col(CapacityHold.work_key) == work_key,
                                                     col(CapacityHold.slot_key) == hold.slot_key))
            return [h.slot_key for h in holds]

    def holds(self, older_than_seconds: float = 0.0) -> list[CapacityHold]:
        cutoff = utcnow() - timedelta(seconds=older_than_seconds)
        with Session(self._engine, expire_on_commit=False) as s:
            return list(s.execute(select(CapacityHold).where(col(CapacityHold.acquired_at) <= cutoff)
                                  .order_by(col(CapacityHold.acquired_at))).scalars())

    def counters(self) -> dict[str, int]:
        with Session(self._engine) as s:
            return {k: a for k, a in s.execute(select(col(CapacityCounter.key), col(CapacityCounter.active)))}

    def active_work_by_tenant(self) -> dict[str, list[str]]:
        """Work keys holding slots, by tenant (works whether or not a tenant limit is configured)."""
        out: dict[str, set[str]] = {}
        with Session(self._engine) as s:
            for tenant, work_key in s.execute(select(col(CapacityHold.tenant), col(CapacityHold.work_key))):
                out.setdefault(tenant, set()).add(work_key)
        return {t: sorted(keys) for t, keys in out.items()}
