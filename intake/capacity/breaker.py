"""A circuit breaker per provider (the model, the forge), and the admission ramp after it.

closed --(threshold failures within the window)--> open --(open_seconds)--> ramping
ramping --(ramp_seconds without failure)--> closed; a failure while ramping reopens it.

While open, intake defers new work (``breaker-open``). While ramping, the global
active-run limit grows linearly from 1 to its configured value, so the backlog comes
back gradually instead of all at once; deferred items also return with jittered delays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import datetime, timedelta


@dataclass(frozen=True)
class BreakerPolicy:
    failure_threshold: int = 5
    window_seconds: float = 30.0
    open_seconds: float = 30.0
    ramp_seconds: float = 120.0


@dataclass(frozen=True)
class BreakerState:
    """What the ledger stores per provider."""

    provider: str
    failures: int = 0
    window_start: datetime | None = None
    opened_at: datetime | None = None
    last_error: str | None = None


@dataclass(frozen=True)
class BreakerView:
    provider: str
    state: str
    """closed | open | ramping"""
    retry_after_seconds: float = 0.0
    ramp_fraction: float = 1.0
    last_error: str | None = None


def record_failure(state: BreakerState, now: datetime, policy: BreakerPolicy, error: str) -> BreakerState:
    view = breaker_gate(state, now, policy)
    if view.state == "open":
        return replace(state, last_error=error)
    if view.state == "ramping":  # a failure while coming back reopens at once
        return replace(state, failures=policy.failure_threshold, window_start=now, opened_at=now, last_error=error)
    in_window = state.window_start is not None and now - state.window_start <= timedelta(seconds=policy.window_seconds)
    failures = state.failures + 1 if in_window else 1
    window_start = state.window_start if in_window else now
    opened_at = now if failures >= policy.failure_threshold else None
    return BreakerState(state.provider, failures, window_start, opened_at, error)


def breaker_gate(state: BreakerState, now: datetime, policy: BreakerPolicy) -> BreakerView:
    if state.opened_at is None:
        return BreakerView(state.provider, "closed", last_error=state.last_error)
    since = (now - state.opened_at).total_seconds()
    if since < policy.open_seconds:
        return BreakerView(state.provider, "open", policy.open_seconds - since, 0.0, state.last_error)
    ramp = since - policy.open_seconds
    if policy.ramp_seconds > 0 and ramp < policy.ramp_seconds:
        return BreakerView(state.provider, "ramping", 0.0, ramp / policy.ramp_seconds, state.last_error)
    return BreakerView(state.provider, "closed", last_error=state.last_error)


def ramped_limit(limit: int | None, views: list[BreakerView], floor: int = 1) -> int | None:
    """The global active-run limit while any breaker ramps (``None``: unlimited stays unlimited
    unless ramping, when the floor grows by one slot per percent of ramp)."""
    fractions = [v.ramp_fraction for v in views if v.state == "ramping"]
    if not fractions:
        return limit
    fraction = min(fractions)
    if limit is None:
        return max(floor, math.floor(100 * fraction))
    return max(floor, min(limit, math.ceil(limit * fraction)))
