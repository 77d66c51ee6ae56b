"""Maintenance activities: relay the admission outbox, prune the delivery dedupe window, enforce
retention, end stale day-budget reservations.

``prune_retention`` applies every table's retention rule (``ledger/_retention.py``: what keeps a
row load-bearing — old journaled model answers included) and the artifact files' age, in bounded
batches, heartbeating throughout so a worker that dies mid-prune is noticed; a rerun simply
continues (pruning is idempotent). One table's failure is logged and does not stop the others;
the activity fails (and is retried) only if every table failed.

``settle_stale_reservations`` ends reservations a dead worker left held (``DayBudgets.settle_stale``).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from sqlalchemy.engine import Engine
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.artifacts import ArtifactStore
from activities.heartbeat import heartbeating
from intake.outbox import relay
from intake.ports import Admitter
from ledger import RETENTION_RULES, DayBudgets, KillSwitch, Retention, SqlIntakeStore
from workflows.kinds import FailureType
from workflows.names import (
    PRUNE_DELIVERIES_ACTIVITY, PRUNE_RETENTION_ACTIVITY, RELAY_OUTBOX_ACTIVITY, SETTLE_STALE_ACTIVITY,
)
from workflows.maintenance_contracts import (  # noqa: F401  (re-exported: the payloads moved to workflows/)
    PruneRequest, RelayRequest, RelayResult, RetentionPolicy, RetentionReport, StaleReservationsRequest,
    StaleReservationsResult,
)


class MaintenanceActivities:
    def __init__(self, store: SqlIntakeStore, admitter: Admitter, engine: Engine | None = None,
                 artifacts: ArtifactStore | None = None, retention: RetentionPolicy | None = None,
                 budgets: DayBudgets | None = None) -> None:
        self._store = store
        self._admitter = admitter
        self._engine = engine
        self._artifacts = artifacts
        self._retention = retention or RetentionPolicy()
        self._budgets = budgets

    @activity.defn(name=RELAY_OUTBOX_ACTIVITY)
    async def relay_outbox(self, req: RelayRequest) -> RelayResult:
        pending = await asyncio.to_thread(self._store.pending_admissions, req.grace_seconds, req.limit)
        kills = KillSwitch(self._engine) if self._engine is not None else None
        report = await relay(self._store, pending, self._admitter, kills)
        return RelayResult(report.admitted, report.failed)

    @activity.defn(name=PRUNE_DELIVERIES_ACTIVITY)
    async def prune_deliveries(self, req: PruneRequest) -> int:
        removed = await asyncio.to_thread(self._store.prune_deliveries, req.window_hours)
        activity.logger.info("pruned %d delivery ids older than %.1f h", removed, req.window_hours)
        return removed

    @activity.defn(name=PRUNE_RETENTION_ACTIVITY)
    async def prune_retention(self, req: PruneRequest) -> RetentionReport:
        policy = req.retention or self._retention
        report = RetentionReport()
        async with heartbeating():
            for table, age in policy.ages_seconds.items():
                if age is None:
                    continue
                try:
                    report.removed[table] = await asyncio.to_thread(prune_table, self._engine, self._artifacts,
                                                                    policy, table, age)
                except Exception as exc:  # noqa: BLE001 - one table's trouble must not stop the others
                    activity.logger.warning("retention: pruning %s failed: %r", table, exc)
                    report.failed[table] = repr(exc)[:500]
        if report.failed and not report.removed:
            raise ApplicationError(f"retention: every table failed: {report.failed}", type=FailureType.RETENTION_FAILED)
        activity.logger.info("retention pruned %s%s", report.removed or "nothing",
                             f"; failed: {sorted(report.failed)}" if report.failed else "")
        return report

    @activity.defn(name=SETTLE_STALE_ACTIVITY)
    async def settle_stale_reservations(self, req: StaleReservationsRequest) -> StaleReservationsResult:
        if self._budgets is None:
            return StaleReservationsResult()
        sweep = await asyncio.to_thread(self._budgets.settle_stale, timedelta(seconds=req.grace_seconds))
        if sweep.from_journal or sweep.estimated:
            activity.logger.warning("ended stale reservations: %d from the journal, %d at their estimate (%s)",
                                    len(sweep.from_journal), len(sweep.estimated),
                                    ", ".join(sweep.from_journal + sweep.estimated)[:2000])
        return StaleReservationsResult(len(sweep.from_journal), len(sweep.estimated))


def prune_table(engine: Engine | None, artifacts: ArtifactStore | None, policy: RetentionPolicy, table: str,
                age_seconds: float) -> int:
    """Apply ``table``'s retention rule (``artifacts``: the files' age); returns how many went."""
    if table == "artifacts":
        return artifacts.prune(age_seconds, policy.batch_size * policy.max_batches) if artifacts else 0
    if table not in RETENTION_RULES:
        raise ValueError(f"no retention rule for {table!r}")
    if engine is None:
        return 0
    return Retention(engine, policy.batch_size, policy.max_batches).prune(table, timedelta(seconds=age_seconds))
