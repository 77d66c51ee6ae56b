"""What the code exports, read back in Prometheus' text format from a real model call and the real
recording functions (``tests/support/telemetry_probe.py``, run in its own process because a process
sets its OpenTelemetry providers once): GenAI span attributes and metrics with the semantic
conventions' buckets, and every series ``ops/alerts.yml`` alerts on."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from prometheus_client.parser import text_string_to_metric_families

from sluicegate.observability.genai import DURATION_BUCKETS, TOKEN_BUCKETS
from tests.test_alert_rules import ROOT, alerts


@pytest.fixture(scope="module")
def probe() -> dict:
    done = subprocess.run([sys.executable, "-m", "tests.support.telemetry_probe"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _samples(probe: dict) -> list:
    return [s for fam in text_string_to_metric_families(probe["exposition"]) for s in fam.samples]


def test_the_model_span_carries_the_genai_attributes(probe):
    [span, _] = [s for s in probe["spans"] if s["attributes"].get("gen_ai.operation.name")]
    attrs = span["attributes"]
    assert span["status"] == "UNSET" and "error.type" not in attrs
    assert span["name"] == f"chat {attrs['gen_ai.request.model']}" and span["kind"] == "CLIENT"
    assert attrs["gen_ai.provider.name"] == "openai" and attrs["gen_ai.request.model"] == "sim-reviewer-1"
    assert attrs["gen_ai.response.finish_reasons"] == ["tool_calls"]  # the simulator's first step asks for the diff
    assert attrs["gen_ai.usage.input_tokens"] > 0 and attrs["gen_ai.usage.output_tokens"] > 0
    # the histograms recorded the same answer's usage
    sums = {s.labels["gen_ai_token_type"]: s.value for s in _samples(probe)
            if s.name == "gen_ai_client_token_usage_sum"}
    assert sums == {"input": attrs["gen_ai.usage.input_tokens"], "output": attrs["gen_ai.usage.output_tokens"]}


def test_a_refused_call_is_an_error_span_and_an_error_typed_duration(probe):
    [_, refused] = [s for s in probe["spans"] if s["attributes"].get("gen_ai.operation.name")]
    assert refused["status"] == "ERROR" and refused["attributes"]["error.type"] == "BadRequestError"
    assert "gen_ai.usage.input_tokens" not in refused["attributes"]
    errors = [s for s in _samples(probe) if s.name == "gen_ai_client_operation_duration_seconds_count"
              and s.labels.get("error_type") == "BadRequestError"]
    assert [s.value for s in errors] == [1.0]


def test_genai_histograms_use_the_semantic_conventions_buckets(probe):
    def bounds(name: str) -> list[float]:
        les = sorted({float(s.labels["le"]) for s in _samples(probe) if s.name == name} - {float("inf")})
        return les

    assert bounds("gen_ai_client_token_usage_bucket") == [float(b) for b in TOKEN_BUCKETS]
    assert bounds("gen_ai_client_operation_duration_seconds_bucket") == [float(b) for b in DURATION_BUCKETS]


def test_every_series_an_alert_reads_is_exported(probe):
    exported = {s.name for s in _samples(probe)}
    for rule in alerts():
        for series in set(re.findall(r"\b(sluicegate_[a-zA-Z_]+)", rule["expr"])):
            assert series in exported, f"{rule['alert']} reads {series}, which the code does not export"
