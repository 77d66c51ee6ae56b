"""Series an on-call team alerts on (``ops/alerts.yml``): run latency, activity attempts and tool
calls, heartbeat staleness. Instruments come from the global meter provider, so recording them is
a no-op in processes that never set metrics up.

| instrument | kind | attributes |
|---|---|---|
| ``sluicegate.run.latency`` | histogram (s) | status, tenant — admission (receipt written) → outcome recorded |
| ``sluicegate.activity.attempts`` | counter | activity, retry (``true`` from the second attempt) |
| ``sluicegate.tool.calls`` | counter | tool (activity name), outcome (``ok`` / ``error``) |
| ``sluicegate.activity.heartbeat.staleness`` | observable gauge (s) | activity — worker only |
"""

from __future__ import annotations

from opentelemetry import metrics

LATENCY_BUCKETS = (1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 21600, 86400)

_meter = metrics.get_meter("sluicegate")
run_latency = _meter.create_histogram("sluicegate.run.latency", unit="s",
                                      description="admission (receipt written) to the run's outcome recorded",
                                      explicit_bucket_boundaries_advisory=list(LATENCY_BUCKETS))
activity_attempts = _meter.create_counter("sluicegate.activity.attempts",
                                          description="activity attempts started; retry=true from the second")
tool_calls = _meter.create_counter("sluicegate.tool.calls", description="tool-call activity attempts by outcome")


def record_run_latency(seconds: float, status: str, tenant: str) -> None:
    run_latency.record(max(seconds, 0.0), {"status": status, "tenant": tenant or "-"})
