"""OpenTelemetry metrics: what the gate decided, what runs cost, how full capacity is.

Instruments are created from the global meter provider, so code that records them works
(as no-ops) in processes that never call :func:`setup_metrics` — tests, the CLI.

| instrument | kind | attributes |
|---|---|---|
| ``sluicegate.intake.decisions`` | counter | outcome, reason, source, tenant |
| ``sluicegate.intake.decision.duration`` | histogram (s) | outcome |
| ``sluicegate.intake.unauthenticated`` | counter | source (a configured name, ``manual`` or ``unknown``), reason, status |
| ``sluicegate.run.orders`` | counter | status, tenant |
| ``sluicegate.run.steps`` | histogram | status |
| ``sluicegate.run.cost`` | histogram (USD) | tenant |
| ``sluicegate.run.tokens`` | counter | category (input, cached_input, output, reasoning), tenant |
| ``sluicegate.run.retries`` | counter | tenant |
| ``sluicegate.dead_letters`` | counter | tenant |
| ``sluicegate.capacity.active`` | observable gauge | counter (global, tenant:…, key:…) — worker only |
| ``sluicegate.capacity.deferred`` | observable gauge | tenant — worker only |
| ``sluicegate.intake.repeat_starts`` | observable counter | outcome (set_off, started, not_started, dropped, cut_off) — API only |

Prometheus ``/metrics`` (``telemetry.prometheus.api_bind`` / ``worker_bind``) serves the same
instruments next to the exporter; the full list of series is in docs/observability.md.

Export by ``telemetry.exporter``: ``file`` writes JSON lines next to the traces
(``<traces>.metrics.jsonl``), ``console`` to stdout, ``otlp`` over gRPC; every 10 s, or every
``OTEL_METRIC_EXPORT_INTERVAL`` milliseconds when that standard variable is set.

Requests refused before their sender was authenticated leave nothing durable: they are
counted by ``sluicegate.intake.unauthenticated`` instead (attributes are drawn from fixed
sets, so a flood of made-up source names cannot grow the metric's cardinality).
"""

from __future__ import annotations

import atexit
import json
import os
from typing import Callable, Iterable

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Observation

from workflows.contracts import NEEDS_A_PERSON
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    ConsoleMetricExporter, MetricExporter, MetricReader, PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource

from sluicegate.config.settings import Settings
from sluicegate.observability.prometheus_export import bind_for, prometheus_reader

EXPORT_INTERVAL_MS = 10_000
_meter = metrics.get_meter("sluicegate")

decisions = _meter.create_counter("sluicegate.intake.decisions", description="intake decisions by outcome and reason")
decision_duration = _meter.create_histogram("sluicegate.intake.decision.duration", unit="s",
                                            description="time from receipt of a trigger to its decision")
run_orders = _meter.create_counter("sluicegate.run.orders", description="work orders ended, by status")
run_steps = _meter.create_histogram("sluicegate.run.steps", description="model steps per work order")
run_cost = _meter.create_histogram("sluicegate.run.cost", unit="USD", description="cost per work order")
run_tokens = _meter.create_counter("sluicegate.run.tokens", description="tokens by category")
run_retries = _meter.create_counter("sluicegate.run.retries", description="activity retries spent by work orders")
dead_letters = _meter.create_counter("sluicegate.dead_letters", description="work orders that ended in a dead letter")
unauthenticated = _meter.create_counter(
    "sluicegate.intake.unauthenticated",
    description="requests refused before authentication (no receipt is written), by source and reason")


def record_unauthenticated(source: str, reason: str, status: int) -> None:
    """One request refused before its sender was authenticated. ``source`` must be a configured
    source name, ``manual``, ``console`` (the operator console) or ``unknown`` — never a name
    taken from the request."""
    unauthenticated.add(1, {"source": source, "reason": reason, "status": status})


def record_decision(decision, envelope, seconds: float) -> None:
    """``IntakeService``'s ``on_decision`` hook."""
    decisions.add(1, {"outcome": str(decision.outcome), "reason": str(decision.reason), "source": envelope.source,
                      "tenant": envelope.tenant})
    decision_duration.record(seconds, {"outcome": str(decision.outcome)})


def record_outcome(outcome) -> None:
    """A finished work order (``workflows.contracts.RunOutcome``)."""
    tenant = {"tenant": outcome.tenant or "-"}
    run_orders.add(1, {"status": outcome.status, **tenant})
    run_steps.record(outcome.steps, {"status": outcome.status})
    run_cost.record(outcome.cost_usd, tenant)
    for category in ("input", "cached_input", "output", "reasoning"):
        run_tokens.add(getattr(outcome.usage, category, 0), {"category": category, **tenant})
    run_retries.add(outcome.retries, tenant)
    if outcome.status in NEEDS_A_PERSON:
        dead_letters.add(1, tenant)


def observe_capacity(counters: Callable[[], dict[str, int]], deferred: Callable[[], dict[str, int]]) -> None:
    """Register the capacity gauges (read from the ledger at each export)."""
    def active(_: CallbackOptions) -> Iterable[Observation]:
        return [Observation(v, {"counter": k}) for k, v in counters().items()]

    def waiting(_: CallbackOptions) -> Iterable[Observation]:
        return [Observation(v, {"tenant": t}) for t, v in deferred().items()]

    _meter.create_observable_gauge("sluicegate.capacity.active", [active], description="slots held per counter")
    _meter.create_observable_gauge("sluicegate.capacity.deferred", [waiting], description="items waiting per tenant")


_repeat_starts: list[Callable[[], dict[str, int]]] = []


def observe_repeat_starts(counts: Callable[[], dict[str, int]]) -> None:
    """Export the intake's starts set off by repeats (``IntakeService.starts.counts``) as the
    monotonic counter ``sluicegate.intake.repeat_starts{outcome}``: ``set_off``, ``started``,
    ``not_started`` (failed, a kill in force, nothing left to start), ``dropped`` (the bound on starts
    in flight ran) and ``cut_off`` (at shutdown). One instrument per process, summing every intake
    service registered in it (the API has one; a test process may make several apps), so the total
    never goes down."""
    first = not _repeat_starts
    _repeat_starts.append(counts)

    def observe(_: CallbackOptions) -> Iterable[Observation]:
        total: dict[str, int] = {}
        for source in _repeat_starts:
            for outcome, n in source().items():
                total[outcome] = total.get(outcome, 0) + n
        return [Observation(n, {"outcome": outcome}) for outcome, n in total.items()]

    if first:
        _meter.create_observable_counter(
            "sluicegate.intake.repeat_starts", [observe],
            description="starts of versions accepted and never started, set off by a repeat of a delivery")


def _file_exporter(path) -> MetricExporter:
    path.parent.mkdir(parents=True, exist_ok=True)
    out = open(path, "a", encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    return ConsoleMetricExporter(out=out, formatter=lambda data: json.dumps(json.loads(data.to_json())) + "\n")


_configured = False


def _export_interval_ms() -> float | None:
    """``None`` lets the SDK read ``OTEL_METRIC_EXPORT_INTERVAL``; else our 10 s default."""
    return None if os.environ.get("OTEL_METRIC_EXPORT_INTERVAL") else EXPORT_INTERVAL_MS


def setup_metrics(settings: Settings, role: str) -> MeterProvider | None:
    """Install the process's meter provider (idempotent); ``None`` when telemetry is off."""
    global _configured
    if _configured:
        return None
    _configured = True
    cfg = settings.telemetry
    readers: list[MetricReader] = []
    bind = bind_for(cfg, role)
    if bind:
        readers.append(prometheus_reader(bind))
    exporter: MetricExporter | None = None
    if cfg.exporter == "console":
        exporter = ConsoleMetricExporter()
    elif cfg.exporter == "file":
        traces = settings.path(cfg.file)
        exporter = _file_exporter(traces.with_name(traces.stem + ".metrics.jsonl"))
    elif cfg.exporter == "otlp":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter

        exporter = OTLPMetricExporter(endpoint=cfg.otlp_endpoint) if cfg.otlp_endpoint else OTLPMetricExporter()
    if exporter is not None:
        readers.append(PeriodicExportingMetricReader(exporter, export_interval_millis=_export_interval_ms()))
    if not readers:
        return None
    provider = MeterProvider(
        metric_readers=readers,
        resource=Resource.create({"service.name": f"{cfg.service_name}-{role}", "service.namespace": cfg.service_name}))
    metrics.set_meter_provider(provider)
    atexit.register(provider.shutdown)
    return provider
