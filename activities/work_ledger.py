"""Work-ledger activities: may an order still run (``claim_order``), and its outcome written back
(``record_run_outcome``, fenced by generation).

A run admitted before the tenancy upgrade carries a work key without its tenant; what it reads
and writes uses the key the upgrade gave its rows (``intake.identity.with_tenant``).
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict

from temporalio import activity

from intake.identity import with_tenant
from ledger import WorkStore
from sluicegate.metrics import record_outcome
from workflows.claims import Claim, ClaimRequest, LedgerStanding, decide_claim
from workflows.contracts import RunOutcome


class WorkLedgerActivities:
    def __init__(self, store: WorkStore) -> None:
        self._store = store

    @activity.defn(name="sluicegate.ledger.record_run_outcome")
    async def record_run_outcome(self, outcome: RunOutcome) -> bool:
        recorded = await asyncio.to_thread(
            self._store.record_outcome, work_key=with_tenant(outcome.work_key, outcome.tenant),
            input_version=outcome.input_version,
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

    @activity.defn(name="sluicegate.ledger.claim_order")
    async def claim_order(self, req: ClaimRequest) -> Claim:
        """Read-only: the verdict of ``workflows.claims.decide_claim`` on the ledger's rows."""
        item, version = await asyncio.to_thread(self._store.standing, with_tenant(req.work_key, req.tenant),
                                                   req.input_version)
        standing = LedgerStanding(
            item_generation=item.generation if item else None, item_version=item.current_version if item else None,
            version_generation=version.generation if version else None,
            version_status=version.status if version else None)
        return decide_claim(req, standing)
