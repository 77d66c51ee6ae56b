"""The ``telemetry:`` section: exporters, log format and the Prometheus listeners.

Every Prometheus listener is off until its bind address is set: a ``/metrics`` port opened by
default would publish tenant names and spend to whoever can reach the host.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from sluicegate.config.section import Section


def parse_bind(bind: str) -> tuple[str, int]:
    """``host:port`` → (host, port); a bad value is a config error."""
    host, sep, port = bind.rpartition(":")
    if not sep or not port.isdigit() or not host or not 0 < int(port) < 65536:
        raise ValueError(f"expected host:port, got {bind!r}")
    return host.strip("[]"), int(port)


def _bind(value: str | None) -> str | None:
    if value is not None:
        parse_bind(value)
    return value


Bind = Annotated[str | None, AfterValidator(_bind)]


class PrometheusConfig(Section):
    """``host:port`` addresses for the ``/metrics`` listeners (``null`` = off)."""


    api_bind: Bind = None
    """The webhook API's Sluicegate series (conventionally ``127.0.0.1:9464``)."""
    worker_bind: Bind = None
    """The worker's Sluicegate and GenAI series (conventionally ``127.0.0.1:9465``)."""
    temporal_bind: Bind = None
    """The worker's Temporal SDK metrics from its ``Runtime`` (conventionally ``127.0.0.1:9466``)."""
    ledger_read_seconds: float = Field(default=15.0, gt=0)
    """How long the ledger gauges (queue, dead letters, breakers, pending admissions) are cached
    between reads, so a scrape storm cannot turn into a query storm."""


class TelemetryConfig(Section):

    service_name: str = "sluicegate"
    exporter: Literal["none", "console", "file", "otlp"] = "none"
    file: Path = Path("var/traces.jsonl")
    otlp_endpoint: str | None = None
    log_level: str = "INFO"
    log_format: Literal["text", "json"] = "text"
    """``json``: one JSON object a line with work_key, workflow_id, run_id, tenant and trace_id."""
    prometheus: PrometheusConfig = Field(default_factory=PrometheusConfig)
