"""Taking and giving back capacity, inside the ledger transaction that decides the admission.

``acquire`` runs in the decide transaction: every counter the run needs is raised with
a conditional ``UPDATE … SET active = active + 1 WHERE active < limit`` (atomic on
SQLite and PostgreSQL; counters are always raised in key order, so two admissions never
deadlock), then the day quota the same way, then a rate-bucket token. If any step is
refused, the steps before it are undone in the same transaction and
:class:`CapacityRefused` says which limit and for how long. A work key that already
holds its slots (a newer version superseding a running one) reuses them.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import delete, select, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from intake.capacity import Block, CapacityRequest, take_token
from ledger._capacity_models import AdmissionCount, CapacityCounter, CapacityHold, RateBucket
from ledger._sql import as_utc, dialect_insert, rowcount, utcnow
from sluicegate.errors import SluicegateError


class CapacityRefused(SluicegateError):
    def __init__(self, block: Block, key: str | None, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.block, self.key, self.retry_after = block, key, retry_after


def _touched(model) -> dict:
    """A slot counter records when it was last used, so retention can tell an idle one."""
    return {"updated_at": utcnow()} if model is CapacityCounter else {}


def _raise_counter(s: Session, model, key_cols: dict, column, limit: int) -> bool:
    s.execute(dialect_insert(s, model).values(**key_cols, **{column.key: 0}, **_touched(model))
              .on_conflict_do_nothing())
    where = [getattr(model, k) == v for k, v in key_cols.items()]
    done = s.execute(update(model).where(*where, column < limit).values({column.key: column + 1, **_touched(model)}))
    return rowcount(done) == 1


def _lower_counter(s: Session, model, key_cols: dict, column) -> None:
    where = [getattr(model, k) == v for k, v in key_cols.items()]
    s.execute(update(model).where(*where, column > 0).values({column.key: column - 1, **_touched(model)}))


def holds_slots(s: Session, work_key: str) -> bool:
    """Does ``work_key``'s run hold slots? Locks them (PostgreSQL), so a release committing meanwhile
    is waited for and seen: a newer generation never "reuses" slots that were just given back."""
    rows = s.execute(select(col(CapacityHold.slot_key)).where(col(CapacityHold.work_key) == work_key).with_for_update())
    return rows.first() is not None


def acquire(s: Session, work_key: str, req: CapacityRequest, now: datetime | None = None) -> None:
    """Take the request's slots, quota and rate token for ``work_key`` or raise CapacityRefused."""
    now = now or utcnow()
    if holds_slots(s, work_key):
        return
    taken: list[str] = []
    for claim in sorted(req.slots, key=lambda c: c.key):
        if not _raise_counter(s, CapacityCounter, {"key": claim.key}, CapacityCounter.active, claim.limit):
            for key in taken:
                _lower_counter(s, CapacityCounter, {"key": key}, CapacityCounter.active)
            raise CapacityRefused(claim.block, claim.key, f"{claim.key} has {claim.limit} active run(s), its limit")
        taken.append(claim.key)
    day = now.date().isoformat()
    try:
        if req.day_quota is not None and not _raise_counter(
                s, AdmissionCount, {"tenant": req.tenant, "day": day}, AdmissionCount.count, req.day_quota):
            midnight = datetime.combine(now.date() + timedelta(days=1), datetime.min.time(), now.tzinfo)
            raise CapacityRefused(Block.QUOTA, f"quota:{req.tenant}",
                                  f"tenant {req.tenant} used its {req.day_quota} admissions for {day}",
                                  (midnight - now).total_seconds())
        if req.rate is not None:
            _take_rate_token(s, req, now)
    except CapacityRefused as refused:
        for key in taken:
            _lower_counter(s, CapacityCounter, {"key": key}, CapacityCounter.active)
        if refused.block == Block.RATE and req.day_quota is not None:
            _lower_counter(s, AdmissionCount, {"tenant": req.tenant, "day": day}, AdmissionCount.count)
        raise
    for key in taken:
        s.add(CapacityHold(work_key=work_key, slot_key=key, tenant=req.tenant, generation=0, acquired_at=now))


def _take_rate_token(s: Session, req: CapacityRequest, now: datetime) -> None:
    rate = req.rate
    assert rate is not None  # acquire takes a token only for a request with a rate
    row = s.get(RateBucket, rate.bucket, with_for_update=True)
    if row is None:
        taken, left, wait = take_token(rate.burst, 0.0, rate)
        s.add(RateBucket(key=rate.bucket, tokens=left, updated_at=now))
    else:
        taken, left, wait = take_token(row.tokens, (now - as_utc(row.updated_at)).total_seconds(), rate)
        if taken:
            row.tokens, row.updated_at = left, now
            s.add(row)
    if not taken:
        raise CapacityRefused(Block.RATE, rate.bucket,
                              f"{rate.bucket} allows {rate.per_second:g}/s (burst {rate.burst:g})", wait)


def stamp_generation(s: Session, work_key: str, generation: int) -> None:
    s.execute(update(CapacityHold).where(col(CapacityHold.work_key) == work_key).values(generation=generation))


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
            holds = list(s.execute(query.with_for_update()).scalars())
            for hold in holds:
                _lower_counter(s, CapacityCounter, {"key": hold.slot_key}, CapacityCounter.active)
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
