"""Maintenance activities: relay the admission outbox, prune the delivery dedupe window and old
journaled model answers, end stale day-budget reservations."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import timedelta

from temporalio import activity

from intake.outbox import relay
from intake.ports import Admitter
from ledger import DayBudgets, ModelJournal, SqlIntakeStore


@dataclass
class RelayRequest:
    grace_seconds: float = 30.0
    """Only items accepted longer ago than this (a request may still be admitting them)."""
    limit: int = 100


@dataclass
class RelayResult:
    admitted: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


@dataclass
class PruneRequest:
    window_hours: float
    """Delivery ids older than this are forgotten: a redelivery after it is decided afresh."""
    journal_retention_hours: float = 72.0
    """Journaled model answers older than this are forgotten."""


@dataclass
class StaleReservationsRequest:
    grace_seconds: float = 900.0
    """Reservations held longer than this are ended (their worker died)."""


@dataclass
class StaleReservationsResult:
    from_journal: int = 0
    """Settled with the usage of an answer journaled before the crash."""
    estimated: int = 0
    """Charged at their estimate (fate unknown)."""


class MaintenanceActivities:
    def __init__(self, store: SqlIntakeStore, admitter: Admitter, budgets: DayBudgets | None = None,
                 journal: ModelJournal | None = None) -> None:
        self._store = store
        self._admitter = admitter
        self._budgets = budgets
        self._journal = journal

    @activity.defn(name="sluicegate.maintenance.relay_outbox")
    async def relay_outbox(self, req: RelayRequest) -> RelayResult:
        pending = await asyncio.to_thread(self._store.pending_admissions, req.grace_seconds, req.limit)
        report = await relay(self._store, pending, self._admitter)
        return RelayResult(report.admitted, report.failed)

    @activity.defn(name="sluicegate.maintenance.prune_deliveries")
    async def prune_deliveries(self, req: PruneRequest) -> int:
        removed = await asyncio.to_thread(self._store.prune_deliveries, req.window_hours)
        activity.logger.info("pruned %d delivery ids older than %.1f h", removed, req.window_hours)
        if self._journal is not None:
            answers = await asyncio.to_thread(self._journal.prune, req.journal_retention_hours)
            activity.logger.info("pruned %d journaled model answers older than %.1f h", answers,
                                 req.journal_retention_hours)
        return removed

    @activity.defn(name="sluicegate.maintenance.settle_stale_reservations")
    async def settle_stale_reservations(self, req: StaleReservationsRequest) -> StaleReservationsResult:
        if self._budgets is None:
            return StaleReservationsResult()
        sweep = await asyncio.to_thread(self._budgets.settle_stale, timedelta(seconds=req.grace_seconds))
        if sweep.from_journal or sweep.estimated:
            activity.logger.warning("ended stale reservations: %d from the journal, %d at their estimate (%s)",
                                    len(sweep.from_journal), len(sweep.estimated),
                                    ", ".join(sweep.from_journal + sweep.estimated)[:2000])
        return StaleReservationsResult(len(sweep.from_journal), len(sweep.estimated))
