"""The heartbeat staleness clock: per activity type, the stalest in-flight attempt's seconds since
its last beat (or its start); a finished attempt stops counting."""

from __future__ import annotations

from sluicegate.observability.activity_telemetry import HeartbeatClock


def test_staleness_is_the_stalest_attempt_per_type_and_beats_reset_it():
    now = [100.0]
    clock = HeartbeatClock(now=lambda: now[0])
    model_a, model_b, tool = ("r1", "1", 1), ("r2", "1", 1), ("r1", "2", 1)
    clock.started(model_a, "model")
    clock.started(tool, "tool")
    now[0] = 130.0
    clock.started(model_b, "model")
    clock.beat(tool)
    now[0] = 160.0
    assert clock.stalest() == {"model": 60.0, "tool": 30.0}
    clock.beat(model_a)
    assert clock.stalest() == {"model": 30.0, "tool": 30.0}  # model_b, started at 130, is now the stalest
    clock.ended(model_b)
    clock.ended(tool)
    clock.beat(tool)  # a late beat of an ended attempt does not bring it back
    assert clock.stalest() == {"model": 0.0}
