"""The admission pipeline: dedupe delivery → freshness → policy → decide → admit.

Order matters. A redelivery is stopped by one statement before the authoritative
source is touched. Freshness has two distinct parts: the event's age against its
source's bound (``too-old``), then the authoritative re-read (``stale-version``,
``target-closed``). The freshness read happens outside any database transaction (it is
network I/O). The delivery record, work dedupe, generation bump and receipt commit in
one transaction (``IntakeStore.decide``) *before* the run is started, so a crash after
the commit leaves an accepted-but-not-admitted item (receipt message "admission pending")
rather than a run nobody recorded. A source that cannot be read defers the delivery
without recording it, so a redelivery is decided afresh.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace

from intake.decision import IntakeDecision, Outcome, Reason
from intake.envelope import Envelope, WorkCandidate
from intake.freshness import assess_freshness
from intake.policy import evaluate_policy
from intake.sources.age import event_age_seconds, too_old
from intake.ports import Admission, Admitter, IntakeStore, SourceUnavailable, TargetReader
from intake.receipts import draft_for

log = logging.getLogger("sluicegate.intake")
DEFAULT_DEFER_SECONDS = 30.0


class IntakeService:
    def __init__(self, store: IntakeStore, targets: TargetReader, admitter: Admitter) -> None:
        self._store = store
        self._targets = targets
        self._admitter = admitter

    async def submit(self, envelope: Envelope, candidate: WorkCandidate | None,
                     max_age_seconds: float | None = None) -> IntakeDecision:
        """Decide one normalized trigger and, when accepted, admit it. ``max_age_seconds``
        bounds the event's age (its source's setting); ``None`` means no bound."""
        decision = await self._decide(envelope, candidate, max_age_seconds)
        log.info("%s %s from %s: %s (%s)", envelope.type, envelope.id, envelope.source, decision.outcome,
                 decision.reason, extra={"work_key": decision.work_key, "workflow_id": decision.workflow_id,
                                         "run_id": decision.run_id})
        return decision

    async def _decide(self, envelope: Envelope, candidate: WorkCandidate | None,
                      max_age_seconds: float | None) -> IntakeDecision:
        probe = draft_for(envelope, candidate, Outcome.REJECT, Reason.DUPLICATE_DELIVERY,
                          f"delivery {envelope.id} from {envelope.source} was already decided")
        seen = await asyncio.to_thread(self._store.reject_if_delivery_seen, probe)
        if seen is not None:
            return seen
        if candidate is None:
            return await asyncio.to_thread(self._store.decide, draft_for(
                envelope, None, Outcome.NO_WORK, Reason.NOT_ACTIONABLE,
                f"{envelope.type} asks for no work"))
        if too_old(envelope.time, envelope.received_at, max_age_seconds):
            age = event_age_seconds(envelope.time, envelope.received_at)
            return await asyncio.to_thread(self._store.decide, draft_for(
                envelope, candidate, Outcome.REJECT, Reason.TOO_OLD,
                f"event is {age:.0f}s old; the source allows {max_age_seconds:.0f}s"))
        try:
            snapshot = await self._targets.read(candidate.target)
        except SourceUnavailable as exc:
            retry = exc.retry_after or DEFAULT_DEFER_SECONDS
            draft = draft_for(envelope, candidate, Outcome.DEFER, Reason.SOURCE_UNAVAILABLE,
                              f"cannot read {candidate.target.target_id} from the source: {exc}")
            return await asyncio.to_thread(self._store.record, replace(draft, retry_after_seconds=retry))
        version = candidate.input_version or snapshot.current_version
        stale = assess_freshness(candidate.input_version, snapshot)
        if stale is not None:
            return await asyncio.to_thread(self._store.decide, draft_for(
                envelope, candidate, Outcome.REJECT, stale,
                _freshness_message(stale, candidate, snapshot.current_version), input_version=version))
        refused = evaluate_policy(candidate, snapshot)
        if refused is not None:
            return await asyncio.to_thread(self._store.decide, draft_for(
                envelope, candidate, Outcome.REJECT, refused, f"refused by {refused}", input_version=version))
        decision = await asyncio.to_thread(self._store.decide, draft_for(
            envelope, candidate, Outcome.ACCEPT, Reason.ADMITTED,
            f"admitting {candidate.work_key} at {version}", input_version=version))
        if decision.outcome != Outcome.ACCEPT:
            return decision
        return await self._admit(Admission(decision, envelope, candidate))

    async def _admit(self, admission: Admission) -> IntakeDecision:
        decision = admission.decision
        try:
            workflow_id, run_id = await self._admitter.admit(admission)
        except Exception as exc:  # noqa: BLE001 - any failure leaves the item for the outbox
            log.error("admission failed for %s@%s: %r", decision.work_key, decision.input_version, exc,
                      extra={"work_key": decision.work_key})
            return await asyncio.to_thread(self._store.mark_admission_failed, decision, repr(exc))
        return await asyncio.to_thread(self._store.mark_admitted, decision, workflow_id, run_id)


def _freshness_message(reason: Reason, candidate: WorkCandidate, current: str | None) -> str:
    target = candidate.target.target_id
    if reason == Reason.STALE_VERSION:
        return f"{target}: event is for {candidate.input_version} but the current head is {current}"
    if reason == Reason.TARGET_CLOSED:
        return f"{target} is closed at the source"
    return f"{target} does not exist at the source"
