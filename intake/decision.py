"""The intake contract: four outcomes, enumerated reasons, one decision type.

Every trigger family (schedule, event, goal, manual) ends in an :class:`IntakeDecision`
and every decision is written as a receipt. Reasons are enumerated so dashboards and
alerts can group on them; policy rules add ``policy:<rule>`` reasons.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Outcome(StrEnum):
    ACCEPT = "accept"
    DEFER = "defer"
    REJECT = "reject"
    NO_WORK = "no-work"


class Reason(StrEnum):
    ADMITTED = "admitted"
    """Fresh, permitted, not seen: a run was (or is being) admitted."""
    DUPLICATE_DELIVERY = "duplicate-delivery"
    """This delivery id from this source was already decided."""
    REPLAYED_BODY = "replayed-body"
    """This source already delivered this signed body under another delivery id (a replay)."""
    DUPLICATE_WORK = "duplicate-work"
    """This (work key, input version) is already admitted, running or done."""
    STALE_VERSION = "stale-version"
    """The event's version is not the target's current version at the source."""
    TARGET_CLOSED = "target-closed"
    """The target (pull request) is closed at the source."""
    TARGET_NOT_FOUND = "target-not-found"
    """The authoritative source does not know the target."""
    SOURCE_UNAVAILABLE = "source-unavailable"
    """The authoritative source could not be read (5xx, timeout, rate limit): the delivery is
    queued durably and re-decided by the dispatcher with backoff (defer, answered 202)."""
    FRESHNESS_DEADLINE = "freshness-deadline"
    """The authoritative source did not answer within ``intake.freshness_deadline_seconds``: queued
    and re-decided later exactly like ``source-unavailable`` (defer, answered 202)."""
    LEDGER_UNAVAILABLE = "ledger-unavailable"
    """The ledger could not be reached: nothing was recorded (no receipt can be), answered 503 with
    ``Retry-After``: the one answer that asks the sender to deliver again."""
    TOO_OLD = "too-old"
    """The event is older than the source's configured maximum age."""
    FUTURE_EVENT = "future-event"
    """The event's time is later than its receipt by more than ``intake.max_clock_skew_seconds``
    (a skewed sender clock, or a forged moment): refused before any forge read, and when a queued
    item is re-decided."""
    SOURCE_LAG_LIMIT = "source-lag-limit"
    """The source still does not show the event's version ``intake.max_source_lag_seconds`` after
    the event was received (a task whose version is a moment: the API lags, or the moment was never
    real): the deferred item is dropped instead of re-read without end."""
    NOTHING_CHANGED = "nothing-changed"
    """A scan found no candidate newer than its watermark (no-work)."""
    GOAL_BOUND_REACHED = "goal-bound-reached"
    """A goal watcher hit its poll or deadline bound before the condition held (no-work)."""
    NOT_ACTIONABLE = "not-actionable"
    """A valid event that asks for no work (e.g. a label change): no-work."""
    CAPACITY = "capacity"
    """No free slot (global, tenant or concurrency key), or earlier work is queued ahead (defer)."""
    QUOTA = "quota"
    """The tenant used its admissions for the day (defer until the next day)."""
    RATE_LIMITED = "rate-limited"
    """The source's token bucket for the tenant is empty (defer)."""
    BREAKER_OPEN = "breaker-open"
    """A provider's circuit breaker is open after repeated failures (defer)."""
    BAD_SIGNATURE = "bad-signature"
    """The delivery's signature is missing or does not verify."""
    BAD_INPUT = "bad-input"
    """The delivery is malformed: body, content type or required fields."""
    UNSUPPORTED_EVENT = "unsupported-event"
    """The source sent an event type Sluicegate does not handle."""
    UNSUPPORTED_SCHEMA = "unsupported-schema"
    """A verified delivery names a payload schema version its source's mapping does not accept
    (or none, where the mapping requires one): 422; the raw body is kept for replay."""
    READMISSION_LIMIT = "readmission-limit"
    """This (work key, version) was admitted again after it ended as often as allowed."""
    UNKNOWN_SOURCE = "unknown-source"
    """No source of that name is configured."""
    UNAUTHORIZED_ACTOR = "unauthorized-actor"
    """A manual trigger without a configured actor identity."""
    OUT_OF_SCOPE = "out-of-scope"
    """Authenticated, but the repository is not one its source (or tenant) serves, or the actor
    holds no role in the tenant it named. Decided before any forge read."""
    UNKNOWN_TASK = "unknown-task"
    """The trigger names a task (the work key's suffix, the manual trigger's ``task``) that is not
    registered or not in ``tasks.enabled``: refused before any forge read (``docs/tasks.md``)."""
    KILLED = "killed"
    """A kill in force (``starter.py kill``) covers the work key, its tenant or everything: refused
    before any forge read, nothing queued; a deferred item in the scope is dropped when dispatched
    (``intake/kill_gate.py``)."""


def policy_reason(rule: str) -> str:
    """The reason string for a rejection by policy rule ``rule``."""
    return f"policy:{rule}"


@dataclass(frozen=True)
class IntakeDecision:
    """What intake answered, with the receipt that records it."""

    outcome: Outcome
    reason: str
    message: str
    receipt_id: str
    work_key: str | None = None
    input_version: str | None = None
    generation: int | None = None
    workflow_id: str | None = None
    run_id: str | None = None
    retry_after_seconds: float | None = None
    policy_version: str | None = None
    """The policy version that decided (as on the receipt)."""
    override: str | None = None
    """A check overridden for this admission (an admin's ``rerun-done``, or a policy change re-running
    a done version): the run's side effects are then kept apart from the earlier run's."""
    queued: bool | None = None
    """Set on a repeat answered from the original (``duplicate-delivery``, ``replayed-body``): does
    a waiting deferred item still hold the original receipt? None: follow the outcome (a defer is queued)."""

    def as_json(self) -> dict[str, object]:
        return {k: (str(v) if isinstance(v, StrEnum) else v) for k, v in self.__dict__.items()}
