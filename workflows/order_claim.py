"""Workflow side of "generations only move forward": ask the ledger before an order's first step.

Runs inside the workflow sandbox (deterministic: the answer comes from an activity and lives
in history). If the claim activity cannot reach the ledger within its retries, the order is
decided on what the workflow itself has seen; the ledger's fencing still refuses a stale
generation's side effects.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Iterable

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from workflows.claims import AdmissionRefusal, Claim, ClaimRequest, ClaimVerdict, LedgerStanding, decide_claim
    from workflows.contracts import RunOutcome, WorkOrder
    from workflows.kinds import RunStatus
    from workflows.failures import failure_type
    from workflows.order_end import cancellation_type
    from workflows.names import CLAIM_ORDER_ACTIVITY
    from workflows.lean_steps import ledger_activity, patched

CLAIM_ORDER_PATCH = "claim-order-at-start"
"""Each order first asks the ledger (activity ``sluicegate.ledger.claim_order``) whether it may still run."""
ADMISSION_PATCH = "claim-requires-admission"
"""The claim also proves the order was admitted by intake (``workflows/claims.py``); the claim
activity is retried until the ledger answers, and an order it cannot prove is refused."""
SKIPPED = "skipped"
"""Status of an order that was not run because its admission had already ended (nothing recorded)."""
REFUSED = "refused"
"""Status of an order no admission in the ledger matches (forged or corrupt; nothing recorded)."""


async def claim_order(order: WorkOrder, seen: Iterable[WorkOrder | RunOutcome], cancel_aware: bool = False,
                      ask_policy: bool = False) -> Claim:
    """The ledger's verdict on ``order``. A cancel of the workflow (patch ``cancel-is-an-outcome``)
    during the claim is re-raised, not mistaken for an unreachable ledger. ``ask_policy`` (patch
    ``lean-loop-steps-2``): the claim also says whether the policy is the order's (``Claim.policy_unchanged``)."""
    newest = max(seen, key=lambda o: o.generation, default=None)
    require = patched(ADMISSION_PATCH)
    req = ClaimRequest(order.work_key, order.input_version, order.generation,
                       newest.generation if newest else 0, newest.input_version if newest else "", order.tenant,
                       order.receipt_id, order.owner, order.repo, order.number, require,
                       policy_version=order.policy_version, ask_policy=ask_policy)
    # With admission required, an unreachable ledger must not let the order run: retry until it answers.
    retry = RetryPolicy(maximum_interval=timedelta(seconds=60)) if require else \
        RetryPolicy(maximum_attempts=5, maximum_interval=timedelta(seconds=10))
    try:
        claim: Claim = await ledger_activity(
            CLAIM_ORDER_ACTIVITY, req, result_type=Claim, start_to_close_timeout=timedelta(seconds=30),
            retry_policy=retry, cancellation_type=cancellation_type(cancel_aware))
        return claim
    except ActivityError as err:
        if cancel_aware and workflow.cancellation_reason() is not None:
            raise
        if require:  # fail closed: nothing proves this order was admitted
            workflow.logger.warning("could not claim %s@%s gen %s from the ledger (%s); refused",
                                    order.work_key, order.input_version, order.generation, failure_type(err),
                                    extra={"work_key": order.work_key})
            return Claim(ClaimVerdict.REFUSED, str(AdmissionRefusal.LEDGER_UNREACHABLE), order.generation)
        workflow.logger.warning("could not claim %s@%s gen %s from the ledger (%s); deciding on what this run saw",
                                order.work_key, order.input_version, order.generation, failure_type(err),
                                extra={"work_key": order.work_key})
        return decide_claim(req, LedgerStanding())


def unrun_outcome(order: WorkOrder, claim: Claim) -> RunOutcome:
    """The outcome of an order the claim did not let run: ``superseded``, ``skipped`` or ``refused``,
    no step taken."""
    status = {ClaimVerdict.SUPERSEDED: RunStatus.SUPERSEDED, ClaimVerdict.REFUSED: REFUSED}.get(claim.verdict, SKIPPED)
    return RunOutcome(order.work_key, order.input_version, order.generation, status, claim.reason,
                      run_id=workflow.info().run_id, receipt_id=order.receipt_id, tenant=order.tenant,
                      source=order.source)
