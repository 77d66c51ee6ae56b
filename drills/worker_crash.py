"""Drill: the worker SIGKILLed between effect and checkpoint, several times during a stream.
``python starter.py drill worker-crash`` (``make drill-worker-crash``).

First a baseline: M pull requests reviewed with no crash (``acme/calm``). Then M more
(``acme/crash``) arrive in W waves; before each wave the forge simulator is told to store the
next review comment and then never answer (``after_commit``), so that run's activity cannot
complete; once the comment is stored the worker is SIGKILLed and a new one started. The model
simulator takes a moment per call, so other runs are mid-call at each kill. Checked: every
version of both batches reached a final status, ``done``, with exactly one comment; no dead
letter. Figures: model calls per pull request with crashes vs. the baseline, and the calls that
were in flight (cut off before their answer, so legitimately asked again) at the kills.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import httpx

from drills._harness import DrillReport, leftovers, run_drill, wait_until
from drills._stream import (
    NO_CAPACITY_LIMITS, Pull, build_stream, check_answers, check_reviews, few, model_calls, open_pulls, send,
    wait_finished,
)
from sluicegate.devstack import DevStack, StackHttp

CALM, CRASH = "acme/calm", "acme/crash"
OVERRIDES = {**NO_CAPACITY_LIMITS,
             # a dead worker's activities are noticed after 2 s without a heartbeat, not after the default 10 s
             "SLUICEGATE__ACTIVITIES__TOOL_HEARTBEAT_SECONDS": "2",
             "SLUICEGATE__ACTIVITIES__MODEL_HEARTBEAT_SECONDS": "2",
             "SLUICEGATE__ACTIVITIES__TOOL_START_TO_CLOSE_SECONDS": "60"}


@dataclass(frozen=True)
class Sizes:
    pulls: int = 40
    crashes: int = 8
    in_flight: int = 8
    model_delay: float = 0.2
    seed: int = 9

    @classmethod
    def quick(cls) -> "Sizes":
        return cls(pulls=4, crashes=2)


def _batch(stack: DevStack, pulls: list[Pull], in_flight: int, seed: int):
    stream = build_stream(stack.settings.sources["github"].secret, pulls, len(pulls), 0.0, seed)
    answers, _ = send(stack, stream, in_flight)
    return answers


def _hang_next_comment(web: StackHttp) -> None:
    httpx.post(f"{web.forge}/_sim/faults", timeout=10, json={
        "method": "POST", "path": f"/repos/{CRASH}/issues/[0-9]+/comments$", "after_commit": True,
        "hang_seconds": 120, "times": 1}).raise_for_status()


def _fault_taken(web: StackHttp) -> bool:
    return httpx.get(f"{web.forge}/_sim/faults", timeout=10).json() == []


def _crash_once(stack: DevStack, web: StackHttp, report: DrillReport, n: int) -> int:
    """Wait for the hung comment, SIGKILL the worker, start a new one; returns model calls in flight."""
    if not wait_until(lambda: _fault_taken(web), 90, interval=0.05):
        report.check(f"crash {n}: a review comment reached the hanging forge", False)
        return 0
    time.sleep(0.3)  # the forge stores the comment as it takes the fault, then hangs
    stats = web.model_stats()
    stack.kill_worker()
    in_flight = stats["calls"] - stats["completed"]
    httpx.delete(f"{web.forge}/_sim/faults", timeout=10).raise_for_status()
    t = time.monotonic()
    stack.start_worker()
    report.inject(f"crash {n}: worker SIGKILLed after the forge stored a comment and before the activity "
                  f"completed ({in_flight} model call(s) in flight); new worker polling after "
                  f"{time.monotonic() - t:.1f} s")
    return in_flight


def _drill(sizes: Sizes, stack: DevStack, report: DrillReport) -> None:
    web = StackHttp(stack)
    web.model_fault(delay_seconds=sizes.model_delay, times=None)
    report.inject(f"the model simulator answers every call after {sizes.model_delay} s (a review is 3 calls)")
    calm = open_pulls(web, CALM, sizes.pulls)
    answers = _batch(stack, calm, sizes.in_flight, sizes.seed)
    calm_rows = wait_finished(stack, calm, timeout=60 + 3 * sizes.pulls)
    base = model_calls(web, calm)

    crash = open_pulls(web, CRASH, sizes.pulls)
    waves = [crash[i::sizes.crashes] for i in range(sizes.crashes)]
    report.inject(f"{sizes.pulls} pull requests in {sizes.crashes} waves; before each wave the forge is told to "
                  f"store the next comment on {CRASH} and never answer")
    cut_off = 0
    for n, wave in enumerate(waves, 1):
        _hang_next_comment(web)
        answers += _batch(stack, wave, sizes.in_flight, sizes.seed + n)
        cut_off += _crash_once(stack, web, report, n)
    crash_rows = wait_finished(stack, crash, timeout=120 + 3 * sizes.pulls)

    check_answers(report, stack, answers)
    not_admitted = [a.label for a in answers if a.body.get("admitted") is not True]
    report.check("every delivery admitted", not not_admitted, few(not_admitted))
    check_reviews(report, stack, web, calm, calm_rows, label=" (no crash)")
    check_reviews(report, stack, web, crash, crash_rows, label=" (with crashes)")
    letters = [x for p in calm + crash for x in leftovers(stack, p.work_key)[2]]
    report.check("no dead letter", not letters, few(letters))
    calls = model_calls(web, crash)
    report.figure(f"model calls per PR, no crash: {base} / {len(calm)} = {base / len(calm):.2f}")
    report.figure(f"model calls per PR, {sizes.crashes} worker kills: {calls} / {len(crash)} = "
                  f"{calls / len(crash):.2f} ({cut_off} call(s) were in flight at the kills; one whose answer had "
                  f"not been journaled is asked again)")
    retries = sum((v.result or {}).get("retries", 0) for v in crash_rows)
    report.figure(f"retried activity attempts recorded by the crashed batch's runs: {retries}")


def run(keep: bool = False, sizes: Sizes | None = None) -> DrillReport:
    sizes = sizes or Sizes()
    return run_drill("worker-crash", lambda stack, report: _drill(sizes, stack, report), overrides=OVERRIDES,
                     keep=keep)
