"""Retention: what the prune schedule deletes, table by table, in short bounded batches.

Every table that grows has a rule: an age (configured per table, ``maintenance.retention``)
and what keeps a row **load-bearing** — such a row is never pruned, whatever its age:

| rule | pruned when older than the age | never pruned while |
|---|---|---|
| ``receipts`` | ``created_at`` | it is the receipt of a version still ``accepted``/``admitted`` (the outbox relay rebuilds admissions from it) or of a ``waiting`` deferred item (the dispatcher re-decides from it) |
| ``side_effects`` | ``updated_at`` | ``in_flight`` (reconcile needs it), or its work version is still ``accepted``/``admitted`` (a re-admission must find ``done`` and not post twice) |
| ``credentials`` | ``expires_at`` | not expired |
| ``budget_reservations`` | ``created_at`` | ``reserved`` (a model call's money is still held) |
| ``budget_days`` | its ``day`` | a reservation on that day is still held |
| ``admission_counts`` | its ``day`` | (only today's day is consulted) |
| ``deferred_items`` | ``updated_at`` | ``waiting`` |
| ``capacity_counters`` | ``updated_at`` (last raise/lower) | ``active > 0`` or a run holds the slot |
| ``dead_letters`` | ``created_at`` | ``open`` (only ``resolved`` and ``retried`` letters go) |
| ``model_journal`` | ``created_at`` | its reservation is still ``reserved`` (the stale sweep settles it with the journaled usage), or its work version is still ``accepted``/``admitted`` (a retry of the step, or a re-run of the generation, is served the answer instead of paying the provider again) |
| ``cancel_requests`` | ``created_at`` | a version of its work key is still ``accepted``/``admitted`` (a cancelled outcome recorded later confirms its actor from the request) |
| ``kept_deliveries`` | ``created_at`` | (nothing: a kept body is evidence for a replay, bounded in time by design) |

Not pruned, on purpose: ``work_items`` (the fencing generation; forgetting it would let a
stale holder's generation count again), ``work_versions`` (work dedupe: a done version
must keep blocking its re-review), ``kills`` (the audit of who stopped what, by design),
``scan_watermarks``, ``breakers`` and ``rate_buckets`` (bounded by the configuration).
``deliveries`` keep their own dedupe window (``SqlIntakeStore.prune_deliveries``).

Bounded batches: each batch is one short transaction that selects at most ``batch_size``
primary keys of prunable rows and deletes them with the rule checked again in the DELETE, so
a row that became load-bearing between the two statements stays. On SQLite a batch holds the
write lock for one small DELETE; batches repeat until one finds fewer rows than the batch
size, or ``max_batches`` ran (the rest waits for the next run).

An idle counter deleted in the very instant its first admission in days takes it: the admission's
one upsert (``ledger/_capacity.py``) inserts the row again (PostgreSQL re-checks the conflict after
the delete commits), so it is admitted, never over the limit. (Before session 10's upsert, with a
separate ensure and ``UPDATE``, such an admission found no row and deferred once; a limit below 1
still takes that path, where it is refused anyway.)
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Callable

from sqlalchemy import and_, delete, exists, not_, select, tuple_
from sqlalchemy.engine import Engine
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import SQLModel, col

from ledger._budgets import BudgetDay, BudgetReservation
from ledger._cancels import CancelRequest
from ledger._capacity_models import AdmissionCount, CapacityCounter, CapacityHold, DeferredItem
from ledger._credentials import Credential
from ledger._dead_letters import DeadLetter
from ledger._kept import KeptDelivery
from ledger._model_journal import ModelJournalEntry
from ledger._models import Receipt, SideEffect, WorkVersion
from ledger._sql import utcnow

LIVE_VERSION = ("accepted", "admitted")


def _receipts(cutoff: datetime) -> ColumnElement:
    return and_(col(Receipt.created_at) < cutoff,
                col(Receipt.id).not_in(select(col(WorkVersion.receipt_id))
                                       .where(col(WorkVersion.status).in_(LIVE_VERSION))),
                col(Receipt.id).not_in(select(col(DeferredItem.receipt_id))
                                       .where(col(DeferredItem.status) == "waiting")))


def _side_effects(cutoff: datetime) -> ColumnElement:
    live = exists().where(col(WorkVersion.work_key) == col(SideEffect.work_key),
                          col(WorkVersion.input_version) == col(SideEffect.target_version),
                          col(WorkVersion.status).in_(LIVE_VERSION))
    return and_(col(SideEffect.updated_at) < cutoff, col(SideEffect.status) != "in_flight", not_(live))


def _budget_days(cutoff: datetime) -> ColumnElement:
    held = exists().where(col(BudgetReservation.day) == col(BudgetDay.day),
                          col(BudgetReservation.status) == "reserved")
    return and_(col(BudgetDay.day) < cutoff.date().isoformat(), not_(held))


def _capacity_counters(cutoff: datetime) -> ColumnElement:
    return and_(col(CapacityCounter.active) == 0, col(CapacityCounter.updated_at) < cutoff,
                col(CapacityCounter.key).not_in(select(col(CapacityHold.slot_key))))


def _model_journal(cutoff: datetime) -> ColumnElement:
    held = exists().where(col(BudgetReservation.id) == col(ModelJournalEntry.reservation_id),
                          col(BudgetReservation.status) == "reserved")
    live = exists().where(col(WorkVersion.work_key) == col(ModelJournalEntry.work_key),
                          col(WorkVersion.input_version) == col(ModelJournalEntry.input_version),
                          col(WorkVersion.status).in_(LIVE_VERSION))
    return and_(col(ModelJournalEntry.created_at) < cutoff, not_(held), not_(live))


def _cancel_requests(cutoff: datetime) -> ColumnElement:
    live = exists().where(col(WorkVersion.work_key) == col(CancelRequest.work_key),
                          col(WorkVersion.status).in_(LIVE_VERSION))
    return and_(col(CancelRequest.created_at) < cutoff, not_(live))


@dataclass(frozen=True)
class Rule:
    model: type[SQLModel]
    prunable: Callable[[datetime], ColumnElement]
    """``cutoff`` -> the WHERE clause of rows that may go (old enough and not load-bearing)."""


RULES: dict[str, Rule] = {
    "receipts": Rule(Receipt, _receipts),
    "side_effects": Rule(SideEffect, _side_effects),
    "credentials": Rule(Credential, lambda cutoff: col(Credential.expires_at) < cutoff),
    "budget_reservations": Rule(BudgetReservation, lambda cutoff: and_(col(BudgetReservation.created_at) < cutoff,
                                                                       col(BudgetReservation.status) != "reserved")),
    "budget_days": Rule(BudgetDay, _budget_days),
    "admission_counts": Rule(AdmissionCount, lambda cutoff: col(AdmissionCount.day) < cutoff.date().isoformat()),
    "deferred_items": Rule(DeferredItem, lambda cutoff: and_(col(DeferredItem.updated_at) < cutoff,
                                                             col(DeferredItem.status) != "waiting")),
    "capacity_counters": Rule(CapacityCounter, _capacity_counters),
    "dead_letters": Rule(DeadLetter, lambda cutoff: and_(col(DeadLetter.created_at) < cutoff,
                                                         col(DeadLetter.status).in_(("resolved", "retried")))),
    "model_journal": Rule(ModelJournalEntry, _model_journal),
    "cancel_requests": Rule(CancelRequest, _cancel_requests),
    "kept_deliveries": Rule(KeptDelivery, lambda cutoff: col(KeptDelivery.created_at) < cutoff),
}


class Retention:
    """Applies :data:`RULES` in bounded batches."""

    def __init__(self, engine: Engine, batch_size: int = 500, max_batches: int = 100) -> None:
        self._engine = engine
        self._batch = batch_size
        self._max_batches = max_batches

    def prune(self, name: str, older_than: timedelta, now: datetime | None = None) -> int:
        """Delete ``name``'s prunable rows older than ``older_than``; returns how many went."""
        rule = RULES[name]
        cutoff = (now or utcnow()) - older_than
        table = rule.model.__table__  # type: ignore[attr-defined]  # set on table models; not in SQLModel's types
        keys = tuple(table.primary_key.columns)
        removed = 0
        for _ in range(self._max_batches):
            with self._engine.begin() as conn:
                batch = conn.execute(select(*keys).where(rule.prunable(cutoff)).limit(self._batch)).all()
                if batch:
                    match = keys[0].in_([row[0] for row in batch]) if len(keys) == 1 \
                        else tuple_(*keys).in_([tuple(row) for row in batch])
                    removed += conn.execute(delete(table).where(match, rule.prunable(cutoff))).rowcount
            if len(batch) < self._batch:
                break
        return removed
