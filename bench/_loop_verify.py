"""What verifies ``bench/_loop_overhead.py``'s three sides (a failed check fails the bench)."""

from __future__ import annotations

from bench._bare_agent import AgentResult, AgentStart
from bench._bare_agent_acts import agent_problems
from bench._common import BenchError
from bench._loop import MODEL_STEPS, Overhead


def verify(result: Overhead, outcomes: dict[str, list[tuple[str, int]]], agent: list[AgentResult],
           agent_starts: dict[str, AgentStart], stats: dict, total: int) -> None:
    """Every loop order done in 3 steps, every bare order ran its 5 activities, every bare agent order
    made its 3 model calls and 2 tool calls, and the model simulator saw exactly 3 calls per loop
    order and per bare agent order (nothing else calls it during the measurement)."""
    want = total * MODEL_STEPS
    agent_calls = sum(n for k, n in stats["by_work"].items() if k.startswith("bare-agent/"))
    loop_calls = stats["calls"] - agent_calls
    loop_bad = [o for o in outcomes["loop"] if o != ("done", MODEL_STEPS)]
    bare_bad = [o for o in outcomes["bare"] if o != ("done", MODEL_STEPS)]
    result.checks.append(f"loop: {len(outcomes['loop'])} orders, {len(loop_bad)} not (done, 3 steps); "
                         f"model simulator: {loop_calls} calls for them (expected {want}); "
                         f"{stats['calls']} calls, {stats['completed']} completed in all (expected {2 * want})")
    result.checks.append(f"bare: {len(outcomes['bare'])} orders, {len(bare_bad)} not 5 activities / 3 model")
    agent_line, problems = agent_problems(agent, stats["by_work"], agent_starts, total)
    result.checks.append(agent_line)
    if len(outcomes["loop"]) != total or loop_bad:
        problems.append(f"loop orders off: {len(outcomes['loop'])}/{total}, bad {loop_bad[:3]}")
    if len(outcomes["bare"]) != total or bare_bad:
        problems.append(f"bare orders off: {len(outcomes['bare'])}/{total}, bad {bare_bad[:3]}")
    if loop_calls != want or stats["calls"] != 2 * want or stats["completed"] != 2 * want:
        problems.append(f"model simulator saw {stats['calls']} calls / {stats['completed']} completed "
                        f"({loop_calls} for the loop), want {2 * want} ({want})")
    if problems:
        raise BenchError("overhead verification failed: " + "; ".join(problems))
