"""Gauges read from the ledger: deferred-queue age, open dead letters, breakers open, admissions
pending. Read at most once per ``telemetry.prometheus.ledger_read_seconds`` (cached between
collections), so a Prometheus scrape and the periodic exporter together cost one set of small
aggregate queries. A ledger that cannot be read drops the observations (the series go stale in
Prometheus instead of repeating the last values as if current) and logs once per failure: the
metrics must not fail the worker. ``sluicegate.ledger.gauges_last_success_timestamp`` (Unix
seconds of the last good read) keeps being exported, so ``SluicegateLedgerGaugesStale``
(ops/alerts.yml) says the ledger alerts are blind.

| instrument | kind | attributes |
|---|---|---|
| ``sluicegate.queue.oldest_age`` | gauge (s) | tenant — age of the oldest waiting deferred item |
| ``sluicegate.dead_letters.open`` | gauge | tenant |
| ``sluicegate.breaker.open`` | gauge (1 open, 0 otherwise) | provider |
| ``sluicegate.admissions.pending_oldest_age`` | gauge (s) | — oldest accepted receipt never admitted (0: none) |
| ``sluicegate.ledger.gauges_last_success_timestamp`` | gauge (s) | — Unix time of the last good ledger read |

Queue depth per tenant is ``sluicegate.capacity.deferred`` (``sluicegate.observability.metrics``).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Callable, Iterable, Mapping

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Observation
from sqlalchemy import func, select
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from intake.capacity.breaker import BreakerPolicy, breaker_gate
from ledger import BreakerBoard, DeadLetter, DeferredItem, Receipt, WorkVersion
from ledger._sql import as_utc, utcnow

log = logging.getLogger("sluicegate.metrics")


@dataclass(frozen=True)
class LedgerReading:
    queue_oldest_age: dict[str, float] = field(default_factory=dict)
    dead_letters_open: dict[str, int] = field(default_factory=dict)
    breakers_open: dict[str, int] = field(default_factory=dict)
    pending_admission_age: float = 0.0


def _age(now: datetime, then: datetime | None) -> float:
    return max((now - as_utc(then)).total_seconds(), 0.0) if then is not None else 0.0


def read_ledger(engine: Engine, policy: BreakerPolicy, now: datetime | None = None) -> LedgerReading:
    now = now or utcnow()
    with Session(engine) as s:
        oldest = s.execute(select(col(DeferredItem.tenant), func.min(DeferredItem.enqueued_at))
                           .where(col(DeferredItem.status) == "waiting").group_by(col(DeferredItem.tenant))).all()
        letters = s.execute(select(col(DeadLetter.tenant), func.count()).where(col(DeadLetter.status) == "open")
                            .group_by(col(DeadLetter.tenant))).all()
        pending = s.execute(select(func.min(Receipt.created_at))
                            .join(WorkVersion, col(WorkVersion.receipt_id) == col(Receipt.id))
                            .where(col(WorkVersion.status) == "accepted")).scalar()
    breakers = {b.provider: int(breaker_gate(b, now, policy).state == "open")
                for b in BreakerBoard(engine, policy).states()}
    return LedgerReading({t or "-": _age(now, at) for t, at in oldest}, {t or "-": n for t, n in letters},
                         breakers, _age(now, pending))


class CachedReading:
    """The last reading, refreshed when older than ``max_age_seconds``; ``None`` after a failed read."""

    def __init__(self, read: Callable[[], LedgerReading], max_age_seconds: float,
                 clock: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time) -> None:
        self._read, self._max_age, self._clock, self._wall = read, max_age_seconds, clock, wall
        self._value: LedgerReading | None = None
        self._at = float("-inf")
        self.last_success: float | None = None
        """Unix time of the last good read (``None``: none yet)."""

    def get(self) -> LedgerReading | None:
        if self._clock() - self._at >= self._max_age:
            try:
                self._value = self._read()
                self.last_success = self._wall()
            except Exception as exc:  # noqa: BLE001 - a metrics read must never take the worker down
                log.warning("ledger gauges not refreshed (observations dropped): %r", exc)
                self._value = None
            self._at = self._clock()
        return self._value


def ledger_reading(engine: Engine, policy: BreakerPolicy, max_age_seconds: float) -> CachedReading:
    return CachedReading(lambda: read_ledger(engine, policy), max_age_seconds)


def observe_ledger(cache: CachedReading) -> None:
    """Register the ledger gauges on the global meter (worker only)."""
    meter = metrics.get_meter("sluicegate")

    def gauge(name: str, unit: str, description: str, pick: Callable[[LedgerReading], Mapping[str, float]],
              label: str) -> None:
        def cb(_: CallbackOptions) -> Iterable[Observation]:
            reading = cache.get()
            if reading is None:  # the ledger could not be read: report nothing rather than old values
                return []
            return [Observation(v, {label: k} if label else {}) for k, v in pick(reading).items()]
        meter.create_observable_gauge(name, [cb], unit=unit, description=description)

    gauge("sluicegate.queue.oldest_age", "s", "age of the oldest waiting deferred item",
          lambda r: r.queue_oldest_age, "tenant")
    gauge("sluicegate.dead_letters.open", "", "open dead letters", lambda r: r.dead_letters_open, "tenant")
    gauge("sluicegate.breaker.open", "", "1 while the provider's breaker is open", lambda r: r.breakers_open,
          "provider")
    gauge("sluicegate.admissions.pending_oldest_age", "s", "oldest accepted receipt not yet admitted (0: none)",
          lambda r: {"": r.pending_admission_age}, "")

    def last_success(_: CallbackOptions) -> Iterable[Observation]:
        cache.get()
        return [] if cache.last_success is None else [Observation(cache.last_success)]
    meter.create_observable_gauge("sluicegate.ledger.gauges_last_success_timestamp", [last_success], unit="s",
                                  description="Unix time of the last good read of the ledger gauges")
