"""The peers bench's verification: a peer that starts a run twice for one version, or answers a
delivery with an error, fails the measurement (and so the bench's exit status)."""

from __future__ import annotations

from bench._harness import BenchReport
from bench._peers import measurement


def _round(**over) -> dict:
    row = {"deliveries": 100, "unique_versions": 10, "runs_started": 10, "not_2xx": 0, "deliveries_per_s": 50.0,
           "p50_ms": 100.0, "p95_ms": 300.0, "forge_requests": 0, "model_calls_seen": 0,
           "temporal_workflows": 10, "agent_steps_run": 10}
    return row | over


def test_one_run_per_unique_version_verifies():
    assert measurement("naive", [_round()], None).verified is True


def test_a_second_run_for_a_version_fails_the_bench():
    report = BenchReport("peers_bench", {})
    report.add(measurement("naive", [_round(runs_started=11)], None))
    assert report.ok is False
    assert any("11 runs started for 10 unique versions" in c for c in report.measurements[0].checks)


def test_an_error_answer_or_a_missing_run_fails():
    assert measurement("sluicegate", [_round(not_2xx=1)], None).verified is False
    assert measurement("sluicegate", [_round(temporal_workflows=9)], None).verified is False
    assert measurement("dbos", [_round(agent_steps_run=12)], None).verified is False


def test_ratios_are_sluicegate_over_each_peer():
    m = measurement("sluicegate", [_round(deliveries_per_s=60.0, p95_ms=600.0, forge_requests=11)],
                    [("dbos", [_round(deliveries_per_s=90.0, p95_ms=300.0)])])
    assert m.ratios == {"throughput_vs_dbos": 60.0 / 90.0, "throughput_vs_dbos_target_min": 1.0,
                        "p95_vs_dbos": 2.0, "forge_requests_per_unique_version": 11 / 10,
                        "forge_requests_per_unique_version_target_max": 1.1}
