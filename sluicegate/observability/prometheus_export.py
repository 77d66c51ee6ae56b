"""The ``/metrics`` listeners: the process's OpenTelemetry metrics (Sluicegate and GenAI series)
in Prometheus' text format, next to whatever ``telemetry.exporter`` sends over OTLP or to a file.

One listener per process, on its own port (``telemetry.prometheus.api_bind`` / ``worker_bind``),
never on the webhook port: scrapes do not compete with deliveries for the API's body-read slots,
and the metrics port can be firewalled apart from the public one. The worker's Temporal SDK
metrics are served by the SDK's own Rust ``Runtime`` on ``temporal_bind``
(:func:`temporal_runtime`). All three are off unless configured.
"""

from __future__ import annotations

import logging

from opentelemetry.exporter.prometheus import PrometheusMetricReader
from prometheus_client import start_http_server
from temporalio.runtime import PrometheusConfig as TemporalPrometheus, Runtime, TelemetryConfig as TemporalTelemetry

from sluicegate.config.telemetry import TelemetryConfig, parse_bind

log = logging.getLogger("sluicegate.metrics")


def bind_for(cfg: TelemetryConfig, role: str) -> str | None:
    """The configured listener of ``role`` (``api`` or ``worker``), or None."""
    return {"api": cfg.prometheus.api_bind, "worker": cfg.prometheus.worker_bind}.get(role)


def prometheus_reader(bind: str) -> PrometheusMetricReader:
    """A reader collected on each scrape, and its HTTP listener started on ``bind``."""
    host, port = parse_bind(bind)
    try:
        start_http_server(port, addr=host)
    except OSError as exc:
        raise SystemExit(f"cannot serve /metrics on {bind} (telemetry.prometheus): {exc}") from None
    reader = PrometheusMetricReader()
    log.info("Prometheus /metrics on http://%s/metrics", socket_address(host, port))
    return reader


def temporal_runtime(cfg: TelemetryConfig) -> Runtime | None:
    """A Temporal ``Runtime`` exporting the SDK's metrics (schedule-to-start latency, task slots,
    poll results…) in Prometheus format on ``temporal_bind``; None when that is unset (the
    default runtime, no SDK metrics)."""
    bind = cfg.prometheus.temporal_bind
    if not bind:
        return None
    address = socket_address(*parse_bind(bind))
    try:
        runtime = Runtime(telemetry=TemporalTelemetry(metrics=TemporalPrometheus(bind_address=address)))
    except ValueError as exc:  # the SDK's "Failed starting Prometheus exporter: Address already in use"
        raise SystemExit(f"cannot serve Temporal SDK metrics on {bind} (telemetry.prometheus.temporal_bind): "
                         f"{exc}") from None
    log.info("Temporal SDK metrics on http://%s/metrics", address)
    return runtime


def socket_address(host: str, port: int) -> str:
    """``host:port`` as a socket address: an IPv6 host goes back in brackets (``[::1]:9466``);
    ``parse_bind`` strips them, and the SDK refuses ``::1:9466``."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
