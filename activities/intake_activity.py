"""``sluicegate.intake.submit``: the real intake pipeline, run from a workflow (scans and goals).

The activity turns an :class:`IntakeRequest` into the same envelope + work candidate the
webhook path builds (work key from ``review_candidate``: tenant and target) and calls
``IntakeService.submit``: delivery dedupe, freshness re-read, policy, the ledger decision
and signal-with-start. The delivery id comes from the workflow (deterministic per run and
candidate), so a retried attempt is answered ``duplicate-delivery`` by the ledger instead
of deciding twice.

The worker wires them in ``sluicegate/wiring.py``.
"""

from __future__ import annotations

from datetime import UTC, datetime

from temporalio import activity

from intake.decision import IntakeDecision
from intake.envelope import Envelope, PullRequestRef, TriggerKind, WorkCandidate
from intake.identity import review_candidate
from intake.service import IntakeService
from workflows.scan_contracts import INTAKE_SUBMIT_ACTIVITY, IntakeRequest


def parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def envelope_for(req: IntakeRequest, received_at: datetime) -> tuple[Envelope, WorkCandidate]:
    ref = PullRequestRef(req.owner, req.repo, req.number)
    envelope = Envelope(id=req.delivery_id, source=req.source, type=req.event_type, subject=ref.target_id,
                        time=parse_time(req.emitted_at), received_at=received_at,
                        trigger_kind=TriggerKind(req.trigger_kind), tenant=req.tenant, actor=req.actor)
    candidate = review_candidate(req.tenant, ref, req.input_version, req.draft)
    return envelope, candidate


class IntakeActivities:
    def __init__(self, service: IntakeService) -> None:
        self._service = service

    @activity.defn(name=INTAKE_SUBMIT_ACTIVITY)
    async def submit(self, req: IntakeRequest) -> IntakeDecision:
        envelope, candidate = envelope_for(req, datetime.now(UTC))
        d = await self._service.submit(envelope, candidate)
        return d
