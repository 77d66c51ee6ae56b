"""The recording functions the intake service (on_decision) and the run-outcome activity call, read back
from an in-memory reader on the real SDK."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from opentelemetry import metrics
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from intake.decision import IntakeDecision, Outcome, Reason
from intake.envelope import Envelope, TriggerKind
from sluicegate.observability import metrics as sg
from workflows.contracts import RunOutcome, TokenUsage

READER = InMemoryMetricReader()


@pytest.fixture(scope="module", autouse=True)
def provider():
    # The instruments were created at import from the global (proxy) meter; setting the
    # provider once makes them record, exactly as setup_metrics does in a process.
    metrics.set_meter_provider(MeterProvider(metric_readers=[READER]))


def _points(name: str) -> list:
    data = READER.get_metrics_data()
    return [p for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics if m.name == name
            for p in m.data.data_points]


def test_decisions_are_counted_by_outcome_and_reason_and_timed():
    env = Envelope(str(uuid.uuid4()), "github", "pull_request.opened", None, None, datetime.now(UTC),
                   TriggerKind.EVENT, "acme-metrics")
    for outcome, reason in ((Outcome.ACCEPT, Reason.ADMITTED), (Outcome.DEFER, Reason.CAPACITY),
                            (Outcome.DEFER, Reason.CAPACITY)):
        sg.record_decision(IntakeDecision(outcome, reason, "", "r"), env, 0.02)
    counted = {(p.attributes["outcome"], p.attributes["reason"]): p.value for p in _points("sluicegate.intake.decisions")
               if p.attributes.get("tenant") == "acme-metrics"}
    assert counted == {("accept", "admitted"): 1, ("defer", "capacity"): 2}
    durations = [p for p in _points("sluicegate.intake.decision.duration") if p.attributes["outcome"] == "defer"]
    assert durations and durations[0].count >= 2


def test_run_outcomes_record_cost_tokens_steps_and_dead_letters():
    usage = TokenUsage(input=100, cached_input=40, output=30, reasoning=10)
    sg.record_outcome(RunOutcome("k", "v", 1, "done", "completed", steps=3, usage=usage, cost_usd=0.5,
                                 retries=2, tenant="t-metrics"))
    sg.record_outcome(RunOutcome("k2", "v", 1, "failed", "model-error", steps=1, tenant="t-metrics"))
    tokens = {p.attributes["category"]: p.value for p in _points("sluicegate.run.tokens")
              if p.attributes["tenant"] == "t-metrics"}
    assert tokens == {"input": 100, "cached_input": 40, "output": 30, "reasoning": 10}
    orders = {p.attributes["status"]: p.value for p in _points("sluicegate.run.orders")
              if p.attributes["tenant"] == "t-metrics"}
    assert orders == {"done": 1, "failed": 1}
    [dead] = [p.value for p in _points("sluicegate.dead_letters") if p.attributes["tenant"] == "t-metrics"]
    assert dead == 1
    [cost] = [p for p in _points("sluicegate.run.cost") if p.attributes["tenant"] == "t-metrics"]
    assert cost.sum == 0.5 and cost.count == 2


def test_starts_set_off_by_repeats_are_exported_by_outcome_summed_over_intake_services():
    first = {"set_off": 3, "started": 1, "not_started": 1, "dropped": 4, "cut_off": 1}
    before = {p.attributes["outcome"]: p.value for p in _points("sluicegate.intake.repeat_starts")}
    sg.observe_repeat_starts(lambda: dict(first))
    exported = {p.attributes["outcome"]: p.value for p in _points("sluicegate.intake.repeat_starts")}
    assert {k: v - before.get(k, 0) for k, v in exported.items()} == first
    second = {"set_off": 2, "started": 2, "not_started": 0, "dropped": 0, "cut_off": 0}
    sg.observe_repeat_starts(lambda: second)  # a second app in one process: added, never a reset
    exported = {p.attributes["outcome"]: p.value for p in _points("sluicegate.intake.repeat_starts")}
    assert {k: v - before.get(k, 0) for k, v in exported.items()} == {k: first[k] + second[k] for k in first}
