"""The breaker's state machine and the admission ramp (pure; times are given, not read)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise

from intake.capacity import BreakerPolicy, BreakerState, breaker_gate, ramped_limit, record_failure

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
POLICY = BreakerPolicy(failure_threshold=3, window_seconds=10, open_seconds=30, ramp_seconds=60)


def _fail(state: BreakerState, at: float) -> BreakerState:
    return record_failure(state, T0 + timedelta(seconds=at), POLICY, "429")


def test_opens_on_threshold_failures_within_the_window_only():
    spread = BreakerState("model")
    for t in (0, 11, 22):  # each outside the previous window
        spread = _fail(spread, t)
    assert breaker_gate(spread, T0 + timedelta(seconds=23), POLICY).state == "closed"
    burst = BreakerState("model")
    for t in (0, 1, 2):
        burst = _fail(burst, t)
    view = breaker_gate(burst, T0 + timedelta(seconds=3), POLICY)
    assert view.state == "open" and view.retry_after_seconds == 29


def test_ramps_after_open_then_closes_and_a_failure_while_ramping_reopens():
    state = BreakerState("model")
    for t in (0, 1, 2):
        state = _fail(state, t)
    ramp = breaker_gate(state, T0 + timedelta(seconds=2 + 30 + 15), POLICY)
    assert ramp.state == "ramping" and ramp.ramp_fraction == 0.25
    assert ramped_limit(40, [ramp]) == 10 and ramped_limit(40, []) == 40
    assert breaker_gate(state, T0 + timedelta(seconds=2 + 30 + 61), POLICY).state == "closed"
    reopened = _fail(state, 2 + 30 + 15)
    assert breaker_gate(reopened, T0 + timedelta(seconds=2 + 30 + 16), POLICY).state == "open"


def test_ramp_limit_grows_monotonically_from_one_to_the_limit():
    state = BreakerState("model", 3, T0, T0)
    limits = [ramped_limit(20, [breaker_gate(state, T0 + timedelta(seconds=30 + s), POLICY)]) for s in range(61)]
    assert limits[0] == 1 and limits[-1] == 20
    assert all(a <= b for a, b in pairwise(limits))
