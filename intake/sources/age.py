"""Event age: the first half of freshness (the second is the authoritative re-read).

An event older than its source's ``max_age_seconds`` is stale whatever the target looks
like now: a delivery held in a sender's retry queue for a day, or replayed by hand, must
not start work on the strength of its own claim. Pure: the caller supplies both clocks.

Failure modes written against:

* an event without a time (GitHub ``ping``; a CloudEvent without ``time``) has no age and
  is never too old — the authoritative re-read still guards it;
* an event time in the future (sender clock skew) is not "old": its age is clamped to 0; how far
  ahead of its receipt an event may be is a bound of its own (:func:`lead_seconds`, refused
  ``future-event`` past ``intake.max_clock_skew_seconds``): a moment far ahead is a skewed clock or
  a forged payload, and a task whose version is that moment would wait for it forever;
* a naive datetime is read as UTC rather than compared against an aware one (TypeError).
"""

from __future__ import annotations

from datetime import UTC, datetime


def event_age_seconds(event_time: datetime, received_at: datetime) -> float:
    """Seconds between the event and its receipt; never negative."""
    return max(0.0, (_aware(received_at) - _aware(event_time)).total_seconds())


def lead_seconds(event_time: datetime, received_at: datetime) -> float:
    """Seconds the event's time is *after* its receipt (sender clock skew, or a forged moment); never negative."""
    return max(0.0, (_aware(event_time) - _aware(received_at)).total_seconds())


def too_far_ahead(event_time: datetime | None, received_at: datetime, max_skew_seconds: float | None) -> bool:
    """True when the event's time is more than ``max_skew_seconds`` after its receipt.

    ``event_time`` ``None`` (unknown) or ``max_skew_seconds`` ``None`` (no bound) → False.
    """
    if event_time is None or max_skew_seconds is None:
        return False
    return lead_seconds(event_time, received_at) > max_skew_seconds


def too_old(event_time: datetime | None, received_at: datetime, max_age_seconds: float | None) -> bool:
    """True when the event happened more than ``max_age_seconds`` before it was received.

    ``event_time`` ``None`` (unknown) or ``max_age_seconds`` ``None`` (no bound) → False.
    """
    if event_time is None or max_age_seconds is None:
        return False
    return event_age_seconds(event_time, received_at) > max_age_seconds


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
