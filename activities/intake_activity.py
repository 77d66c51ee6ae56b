"""``sluicegate.intake.submit``: the real intake pipeline, run from a workflow (scans and goals).

The activity turns an :class:`IntakeRequest` into the same envelope + work candidate the
webhook path builds (work key from ``review_candidate``: tenant and target) and calls
``IntakeService.submit``: delivery dedupe, freshness re-read, policy, the ledger decision
and signal-with-start. The delivery id comes from the workflow (deterministic per run and
candidate), so a retried attempt is answered ``duplicate-delivery`` by the ledger instead
of deciding twice.

:func:`trigger_activities` wires the scan/goal/intake activities for the worker.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.engine import Engine
from temporalio import activity
from temporalio.client import Client

from sluicegate.services.intake import intake_service

from intake.decision import IntakeDecision
from intake.envelope import Envelope, PullRequestRef, TriggerKind, WorkCandidate
from intake.identity import review_candidate
from intake.service import IntakeService
from sluicegate.temporal.admitter import TemporalAdmitter
from ledger import SqlIntakeStore, WatermarkStore
from sluicegate.config.settings import Settings
from sluicegate.config.tenancy import scope_rules
from sluicegate.forge.client import ForgeClient
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


def trigger_activities(client: Client, settings: Settings, engine: Engine, forge: ForgeClient,
                       search_attributes: bool = True) -> list:
    """The activities of the schedule (scan) and goal trigger families, for ``create_worker``.

    Admission uses ``settings.temporal.task_queue`` for the agent workflow, like the API.
    """
    from activities.goal_activities import GoalActivities
    from activities.markers import CommentMarks
    from activities.scan_activities import ScanActivities

    store, scope = SqlIntakeStore(engine, policy=settings.intake.policy()), scope_rules(settings)
    intake = IntakeActivities(intake_service(settings, engine, forge,
                                             TemporalAdmitter(client, settings, search_attributes)))
    scans = ScanActivities(forge, WatermarkStore(engine), store, engine, scope)
    goals = GoalActivities(forge, store, engine, scope, CommentMarks.from_forge_config(settings.forge))
    return [intake.submit, scans.list_candidates, scans.advance_watermark, scans.record_no_work, goals.observe,
            goals.record_bound_reached]
