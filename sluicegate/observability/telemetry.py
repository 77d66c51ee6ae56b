"""OpenTelemetry and logging set-up, done once per process at start-up.

One tracer provider per process; Temporal's ``TracingInterceptor`` carries the trace
context through signal-with-start into the workflow and its activities, so one trace
runs from the webhook request to the comment on the forge. Exporter by config:
``none``, ``console`` (stdout), ``file`` (JSON lines, one span each — what the demo
uses) or ``otlp`` (gRPC to ``telemetry.otlp_endpoint``).

Log lines carry ``work_key``, ``workflow_id`` and ``run_id`` whenever they are known: from
``extra={"work_key": ...}``, Temporal's own logger context or the log context
(``sluicegate.observability.log_context``). With ``telemetry.log_format: json`` each record is one JSON object
with those, ``tenant`` and ``trace_id`` too (``null`` when unknown).
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
from pythonjsonlogger.json import JsonFormatter
from temporalio.contrib.opentelemetry import TracingInterceptor

from sluicegate.config.settings import Settings
from sluicegate.observability.log_context import FIELDS, LogContextFilter

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


class _TextFields(logging.Filter):
    """``-`` for unknown fields in the text format."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name in ("work_key", "workflow_id", "run_id"):
            setattr(record, f"{name}_text", getattr(record, name, None) or "-")
        return True


class _JsonFormatter(JsonFormatter):
    """Only the fields an operator queries by, plus Temporal's context and ``extra`` values."""

    def add_fields(self, log_record: dict, record: logging.LogRecord, message_dict: dict) -> None:
        super().add_fields(log_record, record, message_dict)
        for name in FIELDS:
            log_record[name] = getattr(record, name, None)
        for noise in ("work_key_text", "workflow_id_text", "run_id_text", "color_message"):
            log_record.pop(noise, None)


def log_handler(settings: Settings, role: str) -> logging.Handler:
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(LogContextFilter())
    if settings.telemetry.log_format == "json":
        handler.setFormatter(_JsonFormatter("%(asctime)s %(levelname)s %(name)s %(message)s",
                                            rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
                                            static_fields={"role": role}, json_default=str))
        return handler
    handler.addFilter(_TextFields())
    handler.setFormatter(logging.Formatter(
        f"%(asctime)s %(levelname)s {role} %(name)s [work_key=%(work_key_text)s workflow_id=%(workflow_id_text)s "
        "run_id=%(run_id_text)s] %(message)s"))
    return handler


def setup_logging(settings: Settings, role: str) -> None:
    root = logging.getLogger()
    root.handlers[:] = [log_handler(settings, role)]
    root.setLevel(settings.telemetry.log_level)
    for noisy in ("httpx", "httpx2", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
