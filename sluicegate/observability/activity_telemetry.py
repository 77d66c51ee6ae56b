"""A worker interceptor that counts activity attempts and tool-call outcomes, watches heartbeats,
and sets the log context (workflow id, run id, work key, tenant) for everything an activity logs.

Heartbeat staleness is measured here, in the worker that runs the activity, because the server
only notices a silent activity at its heartbeat timeout and says nothing in between: each
in-flight activity that declares a heartbeat timeout is tracked from its start, every heartbeat
resets its clock, and the gauge reports the stalest one per activity type at each collection. A
call stuck inside its client (no progress, so no beats: ``activities/heartbeat.py``) shows up as
a growing value before Temporal times it out; a worker that died shows up as the series vanishing
(its ``up`` goes to 0).
"""

from __future__ import annotations

import time
from typing import Any, Callable, Iterable

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Observation
from temporalio import activity
from temporalio.worker import (
    ActivityInboundInterceptor, ActivityOutboundInterceptor, ExecuteActivityInput, Interceptor,
)

from sluicegate.observability.log_context import log_context, tenant_of
from sluicegate.observability.ops_metrics import activity_attempts, tool_calls

AGENT_PREFIX = "agent/"
"""Agent workflows' ids are ``agent/<work key>`` (``intake.identity.workflow_id_for``)."""


class HeartbeatClock:
    """Last beat (monotonic seconds) of every in-flight heartbeating activity in this worker."""

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self._now = now
        self._last: dict[tuple[str, str, int], tuple[str, float]] = {}

    def started(self, key: tuple[str, str, int], activity_type: str) -> None:
        self._last[key] = (activity_type, self._now())

    def beat(self, key: tuple[str, str, int]) -> None:
        if key in self._last:
            self._last[key] = (self._last[key][0], self._now())

    def ended(self, key: tuple[str, str, int]) -> None:
        self._last.pop(key, None)

    def stalest(self) -> dict[str, float]:
        """Activity type → seconds since the stalest of its in-flight attempts last beat."""
        now, worst = self._now(), dict[str, float]()
        for activity_type, last in list(self._last.values()):
            worst[activity_type] = max(worst.get(activity_type, 0.0), now - last)
        return worst


def _key(info: activity.Info) -> tuple[str, str, int]:
    return (info.workflow_run_id or "", info.activity_id, info.attempt)


class _Outbound(ActivityOutboundInterceptor):
    def __init__(self, nxt: ActivityOutboundInterceptor, clock: HeartbeatClock) -> None:
        super().__init__(nxt)
        self._clock = clock

    def heartbeat(self, *details: Any) -> None:
        self._clock.beat(_key(activity.info()))
        super().heartbeat(*details)


class _Inbound(ActivityInboundInterceptor):
    def __init__(self, nxt: ActivityInboundInterceptor, clock: HeartbeatClock, tools: frozenset[str]) -> None:
        super().__init__(nxt)
        self._clock = clock
        self._tools = tools

    def init(self, outbound: ActivityOutboundInterceptor) -> None:
        super().init(_Outbound(outbound, self._clock))

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        info = activity.info()
        activity_attempts.add(1, {"activity": info.activity_type, "retry": str(info.attempt > 1).lower()})
        watched = info.heartbeat_timeout is not None
        if watched:
            self._clock.started(_key(info), info.activity_type)
        outcome = "error"
        workflow_id = info.workflow_id or ""
        work_key = workflow_id.removeprefix(AGENT_PREFIX) if workflow_id.startswith(AGENT_PREFIX) else None
        try:
            with log_context(workflow_id=info.workflow_id, run_id=info.workflow_run_id, work_key=work_key,
                             tenant=tenant_of(work_key)):
                result = await super().execute_activity(input)
            outcome = "ok"
            return result
        finally:
            if watched:
                self._clock.ended(_key(info))
            if info.activity_type in self._tools:
                tool_calls.add(1, {"tool": info.activity_type, "outcome": outcome})


class ActivityTelemetry(Interceptor):
    """Register on the worker; ``tools`` are the activity names that are the model's tool calls."""

    def __init__(self, tools: Iterable[str], clock: HeartbeatClock | None = None) -> None:
        self.clock = clock or HeartbeatClock()
        self._tools = frozenset(tools)

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _Inbound(next, self.clock, self._tools)

    def observe(self) -> None:
        """Register the staleness gauge (call once, after metrics are set up)."""
        def stale(_: CallbackOptions) -> Iterable[Observation]:
            return [Observation(round(s, 3), {"activity": t}) for t, s in self.clock.stalest().items()]

        metrics.get_meter("sluicegate").create_observable_gauge(
            "sluicegate.activity.heartbeat.staleness", [stale], unit="s",
            description="seconds since the stalest in-flight heartbeating activity of each type last beat")
