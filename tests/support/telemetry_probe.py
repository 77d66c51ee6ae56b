"""Run in a subprocess by the telemetry tests (a process may set its OpenTelemetry providers only
once, and the rest of the suite shares one process): installs an SDK tracer provider with an
in-memory exporter and a meter provider with the Prometheus reader, makes one real model call
(and one the simulator refuses with a 400) through ``ModelActivities`` against the model simulator over HTTP, records every Sluicegate
operational instrument once through the code that records it, and prints a JSON object:
``{"spans": [{name, kind, attributes}], "exposition": "<Prometheus text>"}``.

    .venv/bin/python -m tests.support.telemetry_probe
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import uuid

import httpx

from opentelemetry import metrics, trace
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import REGISTRY, generate_latest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.model import ModelActivities
from activities.model_credentials import openai_client
from simulators import ServerThread
from simulators.model import create_model_app
from sluicegate.observability.activity_telemetry import ActivityTelemetry
from sluicegate.observability.ledger_gauges import CachedReading, LedgerReading, observe_ledger
from sluicegate.observability.metrics import record_outcome
from sluicegate.observability.ops_metrics import activity_attempts, record_run_latency, tool_calls
from tests.support.sims import MODEL_KEY
from workflows.contracts import ModelRequest, RunOutcome
from workflows.review_task import TOOLS

MODEL = "sim-reviewer-1"


async def _model_call(base_url: str) -> None:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, attempt=1, workflow_run_id="run-probe")
    model = ModelActivities(openai_client(base_url, MODEL_KEY, 10.0))
    req = ModelRequest(f"acme/github:acme/api#{uuid.uuid4().int % 10**6}:review", "v1", MODEL,
                       [{"role": "user", "content": "Review pull request acme/api."}], TOOLS, tenant="acme")
    await env.run(model.chat_completion, req)


def main() -> None:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    trace.set_tracer_provider(tracer_provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[PrometheusMetricReader()]))

    sim = ServerThread(create_model_app(api_key=MODEL_KEY)).start()
    try:
        asyncio.run(_model_call(f"{sim.base_url}/v1"))
        httpx.post(f"{sim.base_url}/_sim/faults", json={"status": 400, "times": 1}, timeout=10).raise_for_status()
        try:
            asyncio.run(_model_call(f"{sim.base_url}/v1"))
        except ApplicationError:
            pass  # refused: the span and the duration histogram say so
    finally:
        sim.stop()
    record_outcome(RunOutcome("k", "v1", 1, "done", "completed", steps=1, cost_usd=0.25, tenant="acme"))
    record_run_latency(42.0, "done", "acme")
    activity_attempts.add(1, {"activity": "sluicegate.model.chat_completion", "retry": "true"})
    tool_calls.add(1, {"tool": "sluicegate.tool.post_review_comment", "outcome": "ok"})
    telemetry = ActivityTelemetry([])
    telemetry.clock.started(("run-probe", "1", 1), "sluicegate.model.chat_completion")
    telemetry.observe()
    observe_ledger(CachedReading(lambda: LedgerReading({"acme": 5.0}, {"acme": 1}, {"model": 1}, 3.0), 15))
    print(json.dumps({
        "spans": [{"name": s.name, "kind": s.kind.name, "status": s.status.status_code.name,
                   "attributes": dict(s.attributes or {})}
                  for s in spans.get_finished_spans()],
        "exposition": generate_latest(REGISTRY).decode()}))


if __name__ == "__main__":
    main()
