"""``sluicegate.intake.recheck_policy``: an admitted order re-decided under the policy in force.

Called by the agent workflow before an order's first step (patch ``policy-first-step``,
``workflows/policy_step.py``). An order admitted under the current policy version is permitted at
once (no read). One admitted under another version is re-decided: the rules that need no read
(repository refusals) first, so such a refusal is written even while the forge is down; then the
target is read fresh (the draft rule needs it) and the rest applied. On the workflow's last attempt
(``max_attempts``, patch ``policy-first-step-fail-closed``) a target still unreadable is refused
``policy:recheck-unavailable``: the policy could not be re-checked, so the order does not run. A refusal is written as a ``reject`` receipt
naming the new version, under an id derived from (work key, generation, version), so a retried
attempt writes no second one; the workflow then ends the order ``skipped``.
"""

from __future__ import annotations

import asyncio
import hashlib
from datetime import UTC, datetime
from typing import Mapping

from temporalio import activity
from temporalio.exceptions import ApplicationError

from intake.decision import Outcome
from intake.envelope import PullRequestRef, TriggerKind
from intake.identity import with_tenant
from intake.policy import Policy, recheck_unreadable
from intake.ports import SourceUnavailable, TargetReader
from intake.receipts import ReceiptDraft
from ledger import SqlIntakeStore
from tasks import registry
from workflows.names import RECHECK_POLICY_ACTIVITY
from workflows.policy_step import PolicyCheck, PolicyCheckRequest


def refusal_receipt_id(work_key: str, generation: int, version: str) -> str:
    return "pol_" + hashlib.sha256(f"{work_key}\n{generation}\n{version}".encode()).hexdigest()[:36]


class PolicyRecheckActivities:
    def __init__(self, policy: Policy, targets: TargetReader, store: SqlIntakeStore, *,
                 task_readers: Mapping[str, TargetReader] | None = None) -> None:
        """``targets``: the review task's reader; ``task_readers``: other tasks' readers by name."""
        self._policy = policy
        self._targets = targets
        self._task_readers = dict(task_readers or {})
        self._store = store

    @activity.defn(name=RECHECK_POLICY_ACTIVITY)
    async def recheck_policy(self, req: PolicyCheckRequest) -> PolicyCheck:
        policy = self._policy
        if not policy.changed_since(req.policy_version):
            return PolicyCheck(True, policy.version)
        ref = PullRequestRef(req.owner, req.repo, req.number)
        spec = registry.get(registry.task_of(req.work_key))
        candidate = spec.candidate(req.tenant, ref, req.input_version)
        reader = self._task_readers.get(spec.name, self._targets)
        refused = policy.evaluate_unread(candidate)
        why = f"refused by {refused}"
        if refused is None:
            try:
                snapshot = await reader.read(ref, req.tenant)
            except SourceUnavailable as exc:
                refused = recheck_unreadable(activity.info().attempt, req.max_attempts)
                if refused is None:
                    raise ApplicationError(f"cannot re-read {ref.target_id} for the policy check: {exc}",
                                           type="SourceUnavailable") from None
                why = (f"the policy could not be re-checked ({ref.target_id} unreadable after "
                       f"{req.max_attempts} attempts: {exc}), so it does not run")
            else:
                refused = policy.evaluate(candidate, snapshot)
                if refused is None and spec.policy is not None:
                    refused = spec.policy(candidate, snapshot)
        if refused is None:
            activity.logger.info("%s@%s gen %s admitted under policy %s: still permitted under %s", req.work_key,
                                 req.input_version, req.generation, req.policy_version, policy.version,
                                 extra={"work_key": req.work_key})
            return PolicyCheck(True, policy.version)
        work_key = with_tenant(req.work_key, req.tenant)
        info = activity.info()
        draft = ReceiptDraft(
            outcome=Outcome.REJECT, reason=refused, received_at=datetime.now(UTC),
            message=(f"admitted under policy {req.policy_version}; re-decided before its first step under policy "
                     f"{policy.version}: {why}; the run ends skipped"),
            trigger_kind=TriggerKind(req.trigger_kind) if req.trigger_kind else TriggerKind.EVENT,
            source=req.source or "policy", delivery_id=req.delivery_id, tenant=req.tenant, work_key=work_key,
            target_id=ref.target_id, input_version=req.input_version, policy_version=policy.version)
        receipt_id = await asyncio.to_thread(
            self._store.record_once, draft, refusal_receipt_id(work_key, req.generation, policy.version),
            req.generation, info.workflow_id, info.workflow_run_id)
        activity.logger.warning("%s@%s gen %s refused by %s under policy %s (admitted under %s)", req.work_key,
                                req.input_version, req.generation, refused, policy.version, req.policy_version,
                                extra={"work_key": req.work_key})
        return PolicyCheck(False, policy.version, refused, receipt_id)
