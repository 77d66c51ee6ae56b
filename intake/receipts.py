"""Receipt drafts: what intake asks the ledger to record for one decision."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, replace
from datetime import datetime

from intake.decision import Outcome
from intake.envelope import Envelope, TriggerKind, WorkCandidate


ACTIVITY_ATTEMPT: ContextVar[int | None] = ContextVar("sluicegate_activity_attempt", default=None)
"""The Temporal activity attempt running this code, set by the worker for every activity
(``activities/attempt_context.py``); the ledger stamps it on the receipts it writes. None outside an activity."""


@dataclass(frozen=True)
class ReceiptDraft:
    """A decision before the ledger has stored it (the store fills in ids and generation)."""

    outcome: Outcome
    reason: str
    message: str
    trigger_kind: TriggerKind
    source: str
    received_at: datetime
    delivery_id: str | None = None
    event_type: str | None = None
    subject: str | None = None
    emitted_at: datetime | None = None
    actor: str | None = None
    tenant: str | None = None
    work_key: str | None = None
    target_id: str | None = None
    input_version: str | None = None
    policy_version: str | None = None
    """The policy version that decided; None: the ledger stamps the version it was configured with."""
    retry_after_seconds: float | None = None
    override: str | None = None
    """A check an authorized actor overrode, and why."""
    concurrency_key: str | None = None
    """The capacity planner's concurrency key (filled in by the ledger from the capacity request)."""
    activity_attempt: int | None = None
    """The activity attempt deciding it (None: the ledger takes :data:`ACTIVITY_ATTEMPT`)."""
    body_digest: str | None = None
    """Not a receipt column: claimed in ``deliveries`` with the delivery id (replay detection)."""
    ordered_versions: bool = False
    """Not a receipt column: the task's versions order as strings, so the ledger refuses an accept
    older than a version of the same work already taken (``admission_rules.newer_version_refusal``)."""

    def with_outcome(self, outcome: Outcome, reason: str, message: str) -> "ReceiptDraft":
        return replace(self, outcome=outcome, reason=reason, message=message)


def draft_for(envelope: Envelope, candidate: WorkCandidate | None, outcome: Outcome, reason: str,
              message: str, input_version: str | None = None) -> ReceiptDraft:
    """A draft carrying the envelope's delivery identity and the candidate's domain identity."""
    if envelope.actor:
        message = f"{message} [requested by {envelope.actor}: {envelope.data.get('reason', 'no reason given')}]"
    return ReceiptDraft(
        outcome=outcome, reason=reason, message=message,
        trigger_kind=envelope.trigger_kind, source=envelope.source, received_at=envelope.received_at,
        delivery_id=envelope.id, event_type=envelope.type, subject=envelope.subject,
        emitted_at=envelope.time, actor=envelope.actor, tenant=envelope.tenant,
        work_key=candidate.work_key if candidate else None,
        target_id=candidate.target.target_id if candidate else None,
        input_version=input_version or (candidate.input_version if candidate else None),
        override=envelope.override, body_digest=envelope.body_digest,
    )
