"""OpenTelemetry and logging set-up, done once per process at start-up.

One tracer provider per process; Temporal's ``TracingInterceptor`` carries the trace
context through signal-with-start into the workflow and its activities, so one trace
runs from the webhook request to the comment on the forge. Exporter by config:
``none``, ``console`` (stdout), ``file`` (JSON lines, one span each — what the demo
uses) or ``otlp`` (gRPC to ``telemetry.otlp_endpoint``).

Log lines carry ``work_key``, ``workflow_id`` and ``run_id`` whenever they are known:
from ``extra={"work_key": ...}`` or from Temporal's own logger context.
"""

from __future__ import annotations

import atexit
import json
import logging
import sys
from pathlib import Path
from typing import IO

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
from temporalio.contrib.opentelemetry import TracingInterceptor

from sluicegate.config import Settings

_configured = False


def _file_exporter(path: Path) -> SpanExporter:
    path.parent.mkdir(parents=True, exist_ok=True)
    out: IO[str] = open(path, "a", encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    return ConsoleSpanExporter(out=out, formatter=lambda span: json.dumps(json.loads(span.to_json())) + "\n")


def setup_tracing(settings: Settings, role: str) -> TracerProvider | None:
    """Install the process's tracer provider (idempotent). ``role`` is e.g. ``worker`` or ``api``."""
    global _configured
    if _configured:
        current = trace.get_tracer_provider()
        return current if isinstance(current, TracerProvider) else None
    _configured = True
    cfg = settings.telemetry
    if cfg.exporter == "none":
        return None
    provider = TracerProvider(resource=Resource.create({
        "service.name": f"{cfg.service_name}-{role}", "service.namespace": cfg.service_name}))
    if cfg.exporter == "console":
        exporter: SpanExporter = ConsoleSpanExporter()
    elif cfg.exporter == "file":
        exporter = _file_exporter(settings.path(cfg.file))
    else:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter(endpoint=cfg.otlp_endpoint) if cfg.otlp_endpoint else OTLPSpanExporter()
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=500))
    trace.set_tracer_provider(provider)
    atexit.register(provider.shutdown)  # flush buffered spans however the process ends normally
    return provider


def tracing_interceptor() -> TracingInterceptor:
    return TracingInterceptor(trace.get_tracer("sluicegate.temporal"))


class _ContextFilter(logging.Filter):
    """Lift work key / workflow id / run id into fixed record attributes for the formatter."""

    def filter(self, record: logging.LogRecord) -> bool:
        wf = getattr(record, "temporal_workflow", None) or getattr(record, "temporal_activity", None) or {}
        record.wk = getattr(record, "work_key", None) or "-"
        record.wf = wf.get("workflow_id") or getattr(record, "workflow_id", None) or "-"
        record.run = wf.get("run_id") or wf.get("workflow_run_id") or getattr(record, "run_id", None) or "-"
        return True


def setup_logging(settings: Settings, role: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(_ContextFilter())
    handler.setFormatter(logging.Formatter(
        f"%(asctime)s %(levelname)s {role} %(name)s [work_key=%(wk)s workflow_id=%(wf)s run_id=%(run)s] %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(settings.telemetry.log_level)
    for noisy in ("httpx", "httpx2", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
