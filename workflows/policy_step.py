"""Policy version is live for admitted work: re-decide an order at its first step boundary.

Patch ``policy-first-step``: after the claim lets an order run and before its first model call, the
workflow asks activity ``sluicegate.intake.recheck_policy`` whether the policy in force still
permits it. The activity answers at once when the order's policy version is the current one;
otherwise it re-reads the target and applies the current policy, and when that refuses it writes a
receipt naming the new version. The order then ends ``skipped`` (recorded: the version row leaves
``admitted``, capacity is given back) without a model call.

Workflow code (deterministic): the answer comes from the activity and lives in history.

Patch ``policy-first-step-fail-closed``: the activity is retried for about a quarter of an hour
(backoff doubling from 1 s, capped at 60 s, :data:`RECHECK_ATTEMPTS` attempts). Its last attempt,
still unable to read the target, writes a ``policy:recheck-unavailable`` receipt and refuses; if
even that attempt fails the workflow refuses on its own. Either way the order ends ``skipped``
(fail closed), and a skipped version does not block the same version's re-admission. Histories
without the patch keep the old answer: the order runs under the admission's decision.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from intake.policy import RECHECK_UNAVAILABLE
    from workflows.contracts import RunOutcome, WorkOrder
    from workflows.failures import failure_type
    from workflows.order_claim import SKIPPED
    from workflows.order_end import cancellation_type
    from workflows.names import RECHECK_POLICY_ACTIVITY
    from workflows.lean_steps import ledger_activity, patched

POLICY_FIRST_STEP_PATCH = "policy-first-step"
FAIL_CLOSED_PATCH = "policy-first-step-fail-closed"
RECHECK_ATTEMPTS = 20
"""1+2+4+...+32 s, then 60 s each: about 14 minutes of backoff before the last attempt."""


@dataclass
class PolicyCheckRequest:
    work_key: str
    tenant: str
    owner: str
    repo: str
    number: int
    input_version: str
    generation: int
    policy_version: str | None
    """The version the order was admitted under (``WorkOrder.policy_version``)."""
    trigger_kind: str = ""
    source: str = ""
    delivery_id: str | None = None
    max_attempts: int = 0
    """The activity's attempt limit (patch ``policy-first-step-fail-closed``); 0: it never refuses for an outage."""


@dataclass
class PolicyCheck:
    permitted: bool
    policy_version: str
    """The version in force that decided."""
    reason: str = ""
    """``policy:<rule>`` when refused."""
    receipt_id: str | None = None
    """The refusal's receipt."""


def check_request(order: WorkOrder) -> PolicyCheckRequest:
    return PolicyCheckRequest(order.work_key, order.tenant, order.owner, order.repo, order.number,
                              order.input_version, order.generation, order.policy_version, order.trigger_kind,
                              order.source, order.delivery_id)


async def recheck_policy(order: WorkOrder, cancel_aware: bool) -> PolicyCheck:
    """The current policy's verdict on ``order``; a cancel during the check propagates."""
    fail_closed = patched(FAIL_CLOSED_PATCH)
    request = check_request(order)
    retry = RetryPolicy(maximum_attempts=5, maximum_interval=timedelta(seconds=10))
    if fail_closed:
        request.max_attempts = RECHECK_ATTEMPTS
        retry = RetryPolicy(initial_interval=timedelta(seconds=1), backoff_coefficient=2.0,
                            maximum_interval=timedelta(seconds=60), maximum_attempts=RECHECK_ATTEMPTS)
    try:
        check: PolicyCheck = await ledger_activity(
            RECHECK_POLICY_ACTIVITY, request, result_type=PolicyCheck,
            start_to_close_timeout=timedelta(seconds=30), cancellation_type=cancellation_type(cancel_aware),
            retry_policy=retry)
        return check
    except ActivityError as err:
        if cancel_aware and workflow.cancellation_reason() is not None:
            raise
        if fail_closed:
            workflow.logger.warning("could not re-check the policy for %s@%s gen %s (%s); the order ends skipped",
                                    order.work_key, order.input_version, order.generation, failure_type(err),
                                    extra={"work_key": order.work_key})
            return PolicyCheck(False, order.policy_version or "", RECHECK_UNAVAILABLE)
        workflow.logger.warning("could not re-check the policy for %s@%s gen %s (%s); the admission's decision stands",
                                order.work_key, order.input_version, order.generation, failure_type(err),
                                extra={"work_key": order.work_key})
        return PolicyCheck(True, order.policy_version or "")


def policy_skipped(order: WorkOrder, check: PolicyCheck) -> RunOutcome:
    """The outcome of an order the current policy refused before its first step."""
    return RunOutcome(order.work_key, order.input_version, order.generation, SKIPPED,
                      f"{check.reason} under policy {check.policy_version} (admitted under {order.policy_version})",
                      run_id=workflow.info().run_id, receipt_id=order.receipt_id, tenant=order.tenant,
                      source=order.source)
