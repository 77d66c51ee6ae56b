"""Work-ledger activities: may an order still run (``claim_order``), and its outcome written back
(``record_run_outcome``, fenced by generation).

A run admitted before the tenancy upgrade carries a work key without its tenant; what it reads
and writes uses the key the upgrade gave its rows (``intake.identity.with_tenant``).
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict
from datetime import UTC, datetime

from temporalio import activity

from intake.envelope import PullRequestRef
from intake.identity import with_tenant, work_key_for
from intake.policy import Policy
from ledger import WorkStore
from ledger._sql import as_utc
from sluicegate.observability.metrics import record_outcome
from sluicegate.observability.ops_metrics import record_run_latency
from workflows.claims import AdmissionReceipt, Claim, ClaimRequest, ClaimVerdict, LedgerStanding, decide_claim
from workflows.contracts import RunOutcome
from workflows.names import CLAIM_ORDER_ACTIVITY, RECORD_OUTCOME_ACTIVITY


def key_matches_order(req: ClaimRequest, work_key: str) -> bool:
    """The order's tenant and target make its work key (with the key's task): no order works on one
    repository under another's admission."""
    try:
        task = work_key.rpartition(":")[2]  # the task is the key's own suffix; tenant and target must match it
        return bool(req.owner) and work_key_for(req.tenant, PullRequestRef(req.owner, req.repo, req.number),
                                                task) == work_key
    except ValueError:
        return False


class WorkLedgerActivities:
    def __init__(self, store: WorkStore, require_admission: bool = True, policy: Policy | None = None) -> None:
        """``require_admission``: refuse orders intake did not admit (``temporal.require_admission``).
        ``policy``: the intake policy in force (``intake.policy``), the one ``sluicegate.intake.recheck_policy``
        applies; ``None``: a claim never answers for it (the re-check runs)."""
        self._store = store
        self._require_admission = require_admission
        self._policy = policy

    @activity.defn(name=RECORD_OUTCOME_ACTIVITY)
    async def record_run_outcome(self, outcome: RunOutcome) -> bool:
        key, run_id = with_tenant(outcome.work_key, outcome.tenant), activity.info().workflow_run_id
        if await asyncio.to_thread(self._store.already_recorded, work_key=key, input_version=outcome.input_version,
                                   generation=outcome.generation, status=outcome.status, run_id=run_id):
            activity.logger.info("outcome for %s@%s gen %s already recorded (a repeated ledger write)",
                                 outcome.work_key, outcome.input_version, outcome.generation,
                                 extra={"work_key": outcome.work_key})
            return True
        recorded = await asyncio.to_thread(
            self._store.record_outcome, work_key=key,
            input_version=outcome.input_version,
            generation=outcome.generation, status=outcome.status, run_id=run_id,
            result=asdict(outcome), receipt_id=outcome.receipt_id, operation_keys=outcome.operation_keys,
            external_ids=outcome.external_ids)
        if recorded:
            record_outcome(outcome)
            await self._record_latency(outcome)
        else:
            activity.logger.warning("outcome for %s@%s gen %s not recorded: no such admission in the ledger, or a newer generation owns it",
                                    outcome.work_key, outcome.input_version, outcome.generation,
                                    extra={"work_key": outcome.work_key})
        return recorded

    async def _record_latency(self, outcome: RunOutcome) -> None:
        """``sluicegate.run.latency``: from the admitting receipt's time to now (best effort)."""
        if not outcome.receipt_id:
            return
        try:  # the admitting receipt's time: one statement by its id
            created_at = await asyncio.to_thread(self._store.receipt_created_at, outcome.receipt_id)
        except Exception as exc:  # noqa: BLE001 - a metric must not fail the recorded outcome
            activity.logger.warning("run latency not recorded: %r", exc)
            return
        if created_at is not None:
            seconds = (datetime.now(UTC) - as_utc(created_at)).total_seconds()
            record_run_latency(seconds, str(outcome.status), outcome.tenant)

    @activity.defn(name=CLAIM_ORDER_ACTIVITY)
    async def claim_order(self, req: ClaimRequest) -> Claim:
        """Read-only: the verdict of ``workflows.claims.decide_claim`` on the ledger's rows."""
        work_key = with_tenant(req.work_key, req.tenant)
        item, version, receipt = await asyncio.to_thread(self._store.standing, work_key, req.input_version,
                                                         with_receipt=True)
        standing = LedgerStanding(
            item_generation=item.generation if item else None, item_version=item.current_version if item else None,
            version_generation=version.generation if version else None,
            version_status=version.status if version else None,
            version_receipt_id=version.receipt_id if version else None,
            receipt=AdmissionReceipt(receipt.outcome, receipt.work_key, receipt.input_version, receipt.generation,
                                     receipt.tenant) if receipt else None,
            key_matches_order=key_matches_order(req, work_key), require_admission=self._require_admission)
        claim = decide_claim(req, standing, work_key)
        if req.ask_policy and claim.verdict == ClaimVerdict.RUN and self._policy is not None:
            claim.policy_unchanged = not self._policy.changed_since(req.policy_version)
        if claim.verdict == ClaimVerdict.REFUSED:
            activity.logger.warning("refused work order for %s@%s gen %s: %s (no admission in the ledger matches it)",
                                    req.work_key, req.input_version, req.generation, claim.reason,
                                    extra={"work_key": req.work_key})
        return claim
