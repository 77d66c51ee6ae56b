"""The demo's webhook stream through the HTTP API, dev server, worker and both simulators."""

from __future__ import annotations

import json

import pytest

from demo.outcome import judge, observe, wait_for_runs
from demo.scenario import DEMO_OVERRIDES, DemoDriver, play

pytestmark = pytest.mark.e2e


def test_stream_holds_every_invariant_and_traces_end_to_end(stack_factory):
    stack = stack_factory(**DEMO_OVERRIDES)
    driver = DemoDriver(stack.settings)
    try:
        sent = play(driver)
    finally:
        driver.close()
    versions = wait_for_runs(stack.settings, timeout=120)
    seen = observe(stack.settings)
    verdict = judge(sent, seen)
    assert verdict.ok, [c for c in verdict.checks if not c.ok]
    # 3 pull-request versions + 2 issue versions (opened, then edited) admitted at once
    assert sum(s.got[0] == "accept" for s in sent) == 5 and sum(s.got == ("defer", "capacity") for s in sent) == 1
    assert len(versions) == 6  # the deferred manual trigger was admitted when acme/api#42's run ended
    done = sum(w.status == "done" for w in versions)
    assert done >= 5 and len(seen.comments) >= done  # acme/api#42's first head may be superseded
    assert sum(w.work_key.endswith(":triage") and w.status == "done" for w in versions) == 2

    stack.stop()  # flush spans and metrics
    decided = _decisions_counted(stack.settings)
    through_intake = [s for s in sent if s.got[1] != "bad-signature"]  # refused before intake runs
    assert decided.get(("sluicegate-api", "accept"), 0) + decided.get(("sluicegate-api", "reject"), 0) \
        + decided.get(("sluicegate-api", "defer"), 0) == len(through_intake)
    assert decided.get(("sluicegate-worker", "accept"), 0) == 1  # the deferred trigger, admitted by the dispatcher
    forged = sum(s.unauthenticated for s in sent)
    assert forged >= 1 and _counted(stack.settings, "sluicegate.intake.unauthenticated", ("source", "reason")) == {
        ("sluicegate-api", "github", "bad-signature"): forged}  # counted, and (judge) no receipt

    spans = [json.loads(line) for line in stack.settings.path(stack.settings.telemetry.file).read_text().splitlines()]
    first = sent[0].delivery_id
    root = min((s for s in spans if s["attributes"].get("sluicegate.delivery_id") == first),
               key=lambda s: s["start_time"])  # the redelivery reuses the id
    same_trace = {(s["resource"]["attributes"]["service.name"], s["name"]) for s in spans
                  if s["context"]["trace_id"] == root["context"]["trace_id"]}
    assert ("sluicegate-api", "SignalWithStartWorkflow:AgentLoop") in same_trace
    assert ("sluicegate-worker", "RunActivity:sluicegate.tool.post_review_comment") in same_trace
    assert ("sluicegate-worker", "RunActivity:sluicegate.model.chat_completion") in same_trace


def _decisions_counted(settings) -> dict[tuple[str, str], int]:
    """``sluicegate.intake.decisions`` per (service, outcome), from the last export of each process."""
    return _counted(settings, "sluicegate.intake.decisions", ("outcome",))


def _counted(settings, name: str, attributes: tuple[str, ...]) -> dict[tuple, int]:
    """Counter ``name`` per (service, *attributes), from the last export of each process."""
    traces = settings.path(settings.telemetry.file)
    latest: dict[tuple, int] = {}
    for line in traces.with_name(traces.stem + ".metrics.jsonl").read_text().splitlines():
        for rm in json.loads(line)["resource_metrics"]:
            service = rm["resource"]["attributes"]["service.name"]
            totals: dict[tuple, int] = {}
            for sm in rm["scope_metrics"]:
                for metric in sm["metrics"]:
                    if metric["name"] == name:
                        for p in metric["data"]["data_points"]:
                            key = (service, *(p["attributes"][a] for a in attributes))
                            totals[key] = totals.get(key, 0) + p["value"]
            latest.update(totals)  # counters are cumulative: the last export holds the totals
    return latest
