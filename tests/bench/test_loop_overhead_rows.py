"""The loop bench's overhead row: both baselines' ratios with the 1.2 target beside each (bench.summary
turns every targeted ratio into a row of issue 11's table), and the bare agent side's verification."""

from __future__ import annotations

import pytest

from bench._bare_agent import AgentResult, AgentStart
from bench._bare_agent_acts import agent_problems
from bench._common import BenchError, SideRound
from bench._loop import Overhead
from bench._loop_rows import overhead_ratios
from bench._loop_verify import verify
from bench.summary import rows


def _overhead() -> Overhead:
    o = Overhead(orders=2, concurrency=8)
    o.loop = [SideRound(6, 1.2, [0.6, 0.6]), SideRound(6, 1.5, [0.75, 0.75])]
    o.bare = [SideRound(6, 0.6, [0.3, 0.3]), SideRound(6, 1.0, [0.5, 0.5])]
    o.bare_agent = [SideRound(6, 1.0, [0.5, 0.5]), SideRound(6, 1.25, [0.6, 0.6])]
    o.cpu = {"loop": {o.bench_proc: [30.0], "temporal": [40.0]}, "bare": {o.bench_proc: [10.0], "temporal": [32.0]},
             "bare_agent": {o.bench_proc: [20.0], "temporal": [40.0]}}
    return o


def test_both_baselines_are_reported_each_with_the_target():
    r = overhead_ratios(_overhead())
    assert r["step_per_round"] == pytest.approx([2.0, 1.5]) and r["step"] == pytest.approx(1.75)
    assert r["step_vs_bare_agent_per_round"] == pytest.approx([1.2, 1.2])
    assert r["cpu_bench_proc"] == pytest.approx(3.0) and r["cpu_bench_proc_vs_bare_agent"] == pytest.approx(1.5)
    assert r["cpu_temporal_vs_bare_agent"] == pytest.approx(1.0)
    table = {row.ratio: row for row in rows({"loop_bench": {"measurements": [{"name": "overhead", "ratios": r}]}})}
    assert table["step"].target == "<= 1.2" and table["step"].met is False
    assert table["step_vs_bare_agent"].met is True  # 1.2 exactly
    assert table["cpu_bench_proc_vs_bare_agent"].met is False and table["cpu_temporal_vs_bare_agent"].met is True
    assert table["p95_vs_bare_agent"].target == ""


def _agent(key: str, **over) -> AgentResult:
    fields = {"key": key, "model_calls": 3, "tools": ["get_pull_request_diff", "post_review_comment"],
              "diff_chars": 120, "comment_ids": [f"c-{key}"], "finish_reason": "stop"} | over
    return AgentResult(**fields)


def _start(key: str) -> AgentStart:
    return AgentStart(key, "v1", "bench", "agent-x", 1, "sim", [], [], 100)


def test_a_bare_agent_order_short_of_its_calls_fails_the_check():
    starts = {k: _start(k) for k in ("bare-agent/a", "bare-agent/b")}
    counted = {f"{k}@v1": 3 for k in starts}
    good = [_agent("bare-agent/a"), _agent("bare-agent/b")]
    assert agent_problems(good, counted, starts, 2)[1] == []
    assert agent_problems([good[0], _agent("bare-agent/b", tools=["get_pull_request_diff"])], counted, starts, 2)[1]
    assert agent_problems(good, {**counted, "bare-agent/b@v1": 4}, starts, 2)[1]
    assert agent_problems([good[0], _agent("bare-agent/b", comment_ids=["c-bare-agent/a"])], counted, starts, 2)[1]
    assert agent_problems(good[:1], counted, starts, 2)[1]


def test_the_loop_calls_are_told_apart_from_the_bare_agents_at_the_model_simulator():
    starts = {"bare-agent/a": _start("bare-agent/a")}
    outcomes = {"loop": [("done", 3)], "bare": [("done", 3)]}
    stats = {"calls": 6, "completed": 6, "by_work": {"acme/review@v9": 3, "bare-agent/a@v1": 3}}
    verify(_overhead(), outcomes, [_agent("bare-agent/a")], starts, stats, 1)
    with pytest.raises(BenchError, match="model simulator saw 7 calls"):
        verify(_overhead(), outcomes, [_agent("bare-agent/a")], starts,
               {**stats, "calls": 7, "by_work": {"acme/review@v9": 4, "bare-agent/a@v1": 3}}, 1)
