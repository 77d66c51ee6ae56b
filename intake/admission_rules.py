"""Admission refusals as pure functions: the pipeline and the ledger only apply them.

The gate rules (``IntakeService`` asks them before any forge read): an event that asks for no
work, a repository outside the source's or tenant's scope, an event older than its source allows or
further ahead of its receipt than clock skew explains; after the read, a source that lags an event
for longer than any real lag (``lag_refusal``).

``SqlIntakeStore.decide`` (``ledger/_intake_store.py``) and its capacity step
(``ledger/_admission_capacity.py``) read rows under lock and then ask these functions what the
rows mean: a repeat of a delivery or of a body, work already admitted or queued, a version
re-admitted too often, a capacity block that defers. Keeping the verdicts here means every
reason a newcomer sees in a receipt has its rule in ``intake/`` (see the table in
``docs/architecture.md``), and each is testable without a database.

Pure: no Temporal, HTTP or database imports.
"""

from __future__ import annotations

import random
from collections.abc import Collection
from dataclasses import replace
from datetime import datetime

from intake.capacity import Block, jittered
from intake.decision import IntakeDecision, Outcome, Reason
from intake.envelope import Envelope, TriggerKind, WorkCandidate
from intake.receipts import ReceiptDraft, draft_for
from intake.scope import ScopeRules
from intake.sources.age import event_age_seconds, lead_seconds, too_far_ahead, too_old

UNCLAIMED_REASONS: frozenset[str] = frozenset({Reason.KILLED, Reason.FUTURE_EVENT})
"""Refusals recorded *without* claiming their delivery id and body digest (read through
:func:`leaves_delivery_unclaimed`, never copied)."""


def leaves_delivery_unclaimed(decided: ReceiptDraft | IntakeDecision) -> bool:
    """Is ``decided`` a refusal recorded without claiming its delivery id, so that a redelivery is
    decided afresh instead of answered ``duplicate-delivery``? ``killed``: the delivery is admitted
    after the unkill. ``future-event``: the event time is ahead of *our* receipt; when our own clock
    runs slow every delivery is refused, and after the clock is fixed a GitHub "Redeliver" must be
    decided again, not lost as a duplicate. Each refusal still writes its receipt (and counts); a
    redelivery refused again writes another. The one predicate for the ledger's write paths (``ledger/_intake_store.py``,
    ``ledger/_plain_decide.py``) and the in-process answers (``intake/seen_deliveries.py``, which may
    keep only a decision whose delivery id the ledger claimed)."""
    return str(decided.reason) in UNCLAIMED_REASONS


def not_actionable(envelope: Envelope) -> ReceiptDraft:
    """A valid event its parser found no work in (a label change, a ping): ``not-actionable``, no-work."""
    return draft_for(envelope, None, Outcome.NO_WORK, Reason.NOT_ACTIONABLE, f"{envelope.type} asks for no work")


def task_refusal(envelope: Envelope, candidate: WorkCandidate, known: Collection[str] | None,
                 ) -> ReceiptDraft | None:
    """``unknown-task`` when the candidate's task (its work key's suffix) is not one intake serves:
    not registered, or not in ``tasks.enabled`` (``known``; ``None``: every task is served)."""
    if known is None or candidate.task in known:
        return None
    return draft_for(envelope, candidate, Outcome.REJECT, Reason.UNKNOWN_TASK,
                     f"task {candidate.task!r} is not enabled here (enabled: {', '.join(sorted(known)) or 'none'})")


def scope_refusal(scope: ScopeRules, envelope: Envelope, candidate: WorkCandidate) -> ReceiptDraft | None:
    """``out-of-scope`` when the repository is not one the source (or tenant) serves."""
    why = scope.refusal(envelope.trigger_kind, envelope.source, candidate.tenant, candidate.target)
    if why is None:
        return None
    return draft_for(envelope, candidate, Outcome.REJECT, Reason.OUT_OF_SCOPE, why)


def age_refusal(envelope: Envelope, candidate: WorkCandidate, max_age_seconds: float | None,
                ) -> ReceiptDraft | None:
    """``too-old`` when the event is older than its source's ``max_age_seconds``."""
    if not too_old(envelope.time, envelope.received_at, max_age_seconds):
        return None
    age = event_age_seconds(envelope.time or envelope.received_at, envelope.received_at)
    return draft_for(envelope, candidate, Outcome.REJECT, Reason.TOO_OLD,
                     f"event is {age:.0f}s old; the source allows {max_age_seconds:.0f}s")


def future_refusal(envelope: Envelope, candidate: WorkCandidate, max_skew_seconds: float | None,
                   ) -> ReceiptDraft | None:
    """``future-event`` when the event's time is more than ``max_skew_seconds`` after its receipt.

    Bounded against the *receipt* (our clock), never against the source's version: a real edit of
    a long-idle issue is days ahead of a lagging read, but no real event is minutes ahead of the
    moment it reached us. A triage event's time is the issue's ``updated_at`` (its version), so an
    ``updated_at`` in year 9999 is refused here instead of deferred as API lag forever.

    Only for a sender's event (``TriggerKind.EVENT``: webhooks): a scan's or a goal's time is its own
    workflow's clock (``workflow.now()``, which a time-skipping test server moves ahead of the wall
    clock), a manual trigger carries none; neither comes from outside."""
    if envelope.trigger_kind != TriggerKind.EVENT or not too_far_ahead(
            envelope.time, envelope.received_at, max_skew_seconds):
        return None
    ahead = lead_seconds(envelope.time or envelope.received_at, envelope.received_at)
    return draft_for(envelope, candidate, Outcome.REJECT, Reason.FUTURE_EVENT,
                     f"event time is {ahead:.0f}s after its receipt; at most {max_skew_seconds:.0f}s of clock "
                     "skew is allowed (intake.max_clock_skew_seconds)")


def lag_refusal(envelope: Envelope, candidate: WorkCandidate, now: datetime, max_lag_seconds: float | None,
                ) -> ReceiptDraft | None:
    """``source-lag-limit`` for an event the source still lags behind (the task's freshness rule said
    ``source-unavailable``) more than ``max_lag_seconds`` after the event was received (``now``: the
    deciding process's clock). A real API lag lasts seconds; a version the source has not shown for
    that long was never a real one (a forged moment within the skew bound), and re-reading it would
    never end. Measured from the receipt, not by counting re-decisions: a deferred item's ``attempts``
    also count capacity re-decisions, which say nothing about the source."""
    if max_lag_seconds is None:
        return None
    waited = event_age_seconds(envelope.received_at, now)
    if waited <= max_lag_seconds:
        return None
    return draft_for(envelope, candidate, Outcome.REJECT, Reason.SOURCE_LAG_LIMIT,
                     f"{candidate.target.target_id}: the source still does not show version {candidate.input_version} "
                     f"{waited:.0f}s after the event was received; the limit is {max_lag_seconds:.0f}s "
                     "(intake.max_source_lag_seconds)")


CAPACITY_REASONS: dict[Block, Reason] = {
    Block.GLOBAL: Reason.CAPACITY, Block.TENANT: Reason.CAPACITY, Block.KEY: Reason.CAPACITY,
    Block.QUOTA: Reason.QUOTA, Block.RATE: Reason.RATE_LIMITED, Block.BREAKER: Reason.BREAKER_OPEN,
    Block.SOURCE: Reason.SOURCE_UNAVAILABLE,
}


def capacity_reason(block: Block) -> Reason:
    """The reason of a defer by capacity ``block``: ``capacity`` (a global, tenant or key slot),
    ``quota``, ``rate-limited``, ``breaker-open`` or ``source-unavailable``."""
    return CAPACITY_REASONS[block]


def deferral_delay(block: Block, retry_after: float | None, default: float, rng: random.Random | None = None) -> float:
    """How long a deferred item waits: the block's own wish, else ``default``; jittered unless it is a
    quota (a quota returns at midnight exactly; the fair order sorts those items then)."""
    retry = retry_after if retry_after is not None else default
    return retry if block == Block.QUOTA else jittered(retry, rng=rng)


def capacity_deferral(draft: ReceiptDraft, block: Block, detail: str, retry: float) -> ReceiptDraft:
    """``draft`` deferred because capacity ``block`` refused it (``detail``: the ledger's words)."""
    deferred = draft.with_outcome(Outcome.DEFER, capacity_reason(block), f"deferred: {detail}; retry after {retry:.0f}s")
    return replace(deferred, retry_after_seconds=retry)


def stale_resume_reason() -> Reason:
    """A deferred item changed while the dispatcher decided it: a no-op defer (``capacity``)."""
    return Reason.CAPACITY


def duplicate_work(draft: ReceiptDraft, why: str) -> ReceiptDraft:
    """``draft`` refused because its (work key, version) is already admitted, running or done."""
    return draft.with_outcome(Outcome.REJECT, Reason.DUPLICATE_WORK, why)


def already_queued(draft: ReceiptDraft, queued_id: str | None, queued_version: str | None,
                   resume_item: str | None) -> ReceiptDraft | None:
    """``duplicate-work`` when the same version already waits in the deferred queue as another item."""
    if queued_id is not None and queued_id != resume_item and queued_version == draft.input_version:
        return duplicate_work(draft, f"{draft.work_key}@{draft.input_version} is already queued "
                                     f"(deferred item {queued_id})")
    return None


def newer_version_refusal(draft: ReceiptDraft, newer: str | None, status: str | None) -> ReceiptDraft | None:
    """``stale-version`` for an accept of a task whose versions order as strings (triage's canonical
    ``updated_at``) when a *newer* version of the same work key (``newer``, in ``status``: accepted,
    admitted or done) was already taken — the ledger reads it under the accept's lock. Two trigger
    events with the same content (``opened``, then ``reopened``) are two versions; the older one
    delivered (or re-decided) after the newer was triaged would otherwise be one more run, although
    the newer run read the issue as it was then, which already includes the older event's content.
    An admin's override is never refused here."""
    if newer is None or draft.override or not draft.ordered_versions:
        return None
    return draft.with_outcome(Outcome.REJECT, Reason.STALE_VERSION, (
        f"{draft.work_key}@{draft.input_version} is older than {newer}, already {status}: "
        "the newer run covers it"))


def readmission_refusal(draft: ReceiptDraft, readmissions: int, limit: int) -> ReceiptDraft | None:
    """``readmission-limit`` once an ended version was admitted again ``limit`` times."""
    if readmissions < limit:
        return None
    return draft.with_outcome(Outcome.REJECT, Reason.READMISSION_LIMIT, (
        f"{draft.work_key}@{draft.input_version} was admitted again {readmissions} times "
        f"after it ended; the limit is {limit} (intake.max_readmissions_per_version)"))


def redelivery_message(delivery_id: str | None, source: str) -> str:
    """The ``duplicate-delivery`` message (also answered before the parse: ``intake/seen_deliveries.py``)."""
    return f"delivery {delivery_id} from {source} was already decided"


REPEAT_REASONS = frozenset({Reason.DUPLICATE_DELIVERY, Reason.REPLAYED_BODY})
"""A delivery answered from its original: it writes no row."""


def is_repeat(decision: IntakeDecision) -> bool:
    """Was ``decision`` answered from an earlier delivery (its id, or its signed content), writing nothing?"""
    return decision.reason in REPEAT_REASONS


def repeat_reason(draft: ReceiptDraft, same_body: bool) -> tuple[Reason, str]:
    """A delivery already decided: by its id (``duplicate-delivery``) or, under another id, by its
    signed body's digest (``replayed-body``, a replay)."""
    if not same_body:
        return Reason.DUPLICATE_DELIVERY, redelivery_message(draft.delivery_id, draft.source)
    return Reason.REPLAYED_BODY, (
        f"delivery {draft.delivery_id} from {draft.source} repeats a body (sha256 {(draft.body_digest or '')[:16]}...) "
        "already delivered under another delivery id within the dedupe window: a replay")
