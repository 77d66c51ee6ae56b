"""One run on the whole stack with the Prometheus listeners on: the API's and the worker's
``/metrics`` and the worker's Temporal SDK listener carry the GenAI, Temporal SDK and Sluicegate
series, and what they count matches what the ledger and the model simulator saw.

Real parts: the dev server, the API and worker processes (configured only through the environment,
as an operator would), the simulators over HTTP, the SQLite ledger.
"""

from __future__ import annotations

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from demo.outcome import wait_for_runs
from sluicegate.devstack import free_port, wait_for
from tests.e2e.conftest import StackHttp

pytestmark = pytest.mark.e2e


def _scrape(port: int) -> dict[str, list]:
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).raise_for_status().text
    series: dict[str, list] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            series.setdefault(sample.name, []).append(sample)
    return series


def _total(series: dict[str, list], name: str, **labels: str) -> float:
    return sum(s.value for s in series.get(name, []) if all(s.labels.get(k) == v for k, v in labels.items()))


def test_metrics_endpoints_after_one_run(stack_factory):
    api, worker, temporal = free_port(), free_port(), free_port()
    stack = stack_factory(SLUICEGATE__TELEMETRY__PROMETHEUS__API_BIND=f"127.0.0.1:{api}",
                          SLUICEGATE__TELEMETRY__PROMETHEUS__WORKER_BIND=f"127.0.0.1:{worker}",
                          SLUICEGATE__TELEMETRY__PROMETHEUS__TEMPORAL_BIND=f"127.0.0.1:{temporal}",
                          SLUICEGATE__TELEMETRY__PROMETHEUS__LEDGER_READ_SECONDS="1")
    web = StackHttp(stack)
    answer = web.send_opened("acme/api", 42)
    assert answer.status_code == 202 and answer.json()["outcome"] == "accept"
    [version] = wait_for_runs(stack.settings, timeout=120)
    assert version.status == "done"
    calls = web.model_stats()["calls"]

    api_series = _scrape(api)
    assert _total(api_series, "sluicegate_intake_decisions_total", outcome="accept", tenant="acme") == 1
    # exported from the start, by outcome: this run's start went through, so no repeat set one off
    repeat_starts = {s.labels["outcome"]: s.value for s in api_series["sluicegate_intake_repeat_starts_total"]}
    assert repeat_starts == {"set_off": 0, "started": 0, "not_started": 0, "dropped": 0, "cut_off": 0}

    # the outcome's counters are recorded right after the ledger write: wait for the worker to get there
    assert wait_for(lambda: _total(_scrape(worker), "sluicegate_run_orders_total", status="done") == 1, timeout=30)
    w = _scrape(worker)
    assert _total(w, "gen_ai_client_operation_duration_seconds_count", gen_ai_operation_name="chat") == calls
    assert _total(w, "gen_ai_client_token_usage_sum", gen_ai_token_type="input") > 0
    assert _total(w, "gen_ai_client_token_usage_sum", gen_ai_token_type="output") > 0
    assert _total(w, "sluicegate_run_latency_seconds_count", status="done", tenant="acme") == 1
    assert _total(w, "sluicegate_run_cost_USD_sum", tenant="acme") > 0
    assert _total(w, "sluicegate_tool_calls_total", outcome="ok") >= 2  # the diff read and the comment
    assert _total(w, "sluicegate_activity_attempts_total", activity="sluicegate.model.chat_completion") == calls
    assert "sluicegate_admissions_pending_oldest_age_seconds" in w  # the ledger gauges are read

    sdk = _scrape(temporal)
    assert any(name.startswith("temporal_activity_schedule_to_start_latency") for name in sdk), sorted(sdk)[:20]
    assert any(name.startswith("temporal_worker_task_slots_available") for name in sdk), sorted(sdk)[:20]
