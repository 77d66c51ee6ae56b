"""Maintenance activities: relay the admission outbox, prune the delivery dedupe window."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from temporalio import activity

from intake.outbox import relay
from intake.ports import Admitter
from ledger import SqlIntakeStore


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


class MaintenanceActivities:
    def __init__(self, store: SqlIntakeStore, admitter: Admitter) -> None:
        self._store = store
        self._admitter = admitter

    @activity.defn(name="sluicegate.maintenance.relay_outbox")
    async def relay_outbox(self, req: RelayRequest) -> RelayResult:
        pending = await asyncio.to_thread(self._store.pending_admissions, req.grace_seconds, req.limit)
        report = await relay(self._store, pending, self._admitter)
        return RelayResult(report.admitted, report.failed)

    @activity.defn(name="sluicegate.maintenance.prune_deliveries")
    async def prune_deliveries(self, req: PruneRequest) -> int:
        removed = await asyncio.to_thread(self._store.prune_deliveries, req.window_hours)
        activity.logger.info("pruned %d delivery ids older than %.1f h", removed, req.window_hours)
        return removed
