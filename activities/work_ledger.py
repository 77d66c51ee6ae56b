"""Activity that writes a run's outcome back to the work ledger (fenced by generation).

A run admitted before the tenancy upgrade carries a work key without its tenant; its outcome
is written under the key the upgrade gave its rows (``intake.identity.with_tenant``).
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict

from temporalio import activity

from intake.identity import with_tenant
from ledger import WorkStore
from sluicegate.metrics import record_outcome
from workflows.contracts import RunOutcome


class WorkLedgerActivities:
    def __init__(self, store: WorkStore) -> None:
        self._store = store

    @activity.defn(name="sluicegate.ledger.record_run_outcome")
    async def record_run_outcome(self, outcome: RunOutcome) -> bool:
        recorded = await asyncio.to_thread(
            self._store.record_outcome, work_key=with_tenant(outcome.work_key, outcome.tenant), input_version=outcome.input_version,
            generation=outcome.generation, status=outcome.status, run_id=activity.info().workflow_run_id,
            result=asdict(outcome), receipt_id=outcome.receipt_id, operation_keys=outcome.operation_keys,
            external_ids=outcome.external_ids)
        if recorded:
            record_outcome(outcome)
        else:
            activity.logger.warning("outcome for %s@%s gen %s not recorded: no such admission in the ledger, or a newer generation owns it",
                                    outcome.work_key, outcome.input_version, outcome.generation,
                                    extra={"work_key": outcome.work_key})
        return recorded
