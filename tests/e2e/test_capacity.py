"""Capacity on the running stack: a concurrency key limit of 1, slots freed after a terminated
run, and the model breaker opening on a burst of 429s and letting work back in after it.

Real parts throughout: the dev server, the worker and API processes, the forge and model
simulators over HTTP, the SQLite ledger. Run intervals are computed from the ledger (accept
receipt → finished version), never assumed.
"""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from itertools import pairwise

import httpx
import pytest
from sqlmodel import Session, select

from demo.outcome import wait_for_runs
from ledger import CapacityLedger, DeferredItem, Receipt, WorkVersion, make_engine
from ledger._sql import as_utc
from sluicegate.devstack import wait_for
from sluicegate.temporal.client import connect
from tests.e2e.conftest import StackHttp
from workflows.capacity_contracts import DISPATCH_WORKFLOW, REAP_WORKFLOW, DispatchRequest, DispatchResult, ReapRequest

pytestmark = pytest.mark.e2e
KEY = "key:repo:acme/api"


def _open_pr(web: StackHttp, number: int) -> None:
    httpx.post(f"{web.forge}/_sim/pulls/acme/api/{number}", json={
        "state": "open", "head_sha": f"{number:040x}", "title": f"change {number}",
        "diff": f"diff --git a/f{number}.py b/f{number}.py\n+print({number})\n"}).raise_for_status()


def _receipts(engine, work_key: str) -> list[Receipt]:
    with Session(engine) as s:
        return list(s.exec(select(Receipt).where(Receipt.work_key == work_key).order_by(Receipt.created_at)))


def test_concurrency_key_limit_one_runs_three_pull_requests_one_at_a_time(stack_factory):
    stack = stack_factory(SLUICEGATE__CAPACITY__CONCURRENCY_LIMIT="1")
    web = StackHttp(stack)
    web.model_fault(delay_seconds=1.0, times=None)  # a run lasts 3+ s: the three deliveries arrive during it
    for n in (45, 46):
        _open_pr(web, n)
    answers = [web.send_opened("acme/api", n) for n in (42, 45, 46)]
    assert [a.status_code for a in answers] == [202, 202, 202]
    assert [a.json()["outcome"] for a in answers] == ["accept", "defer", "defer"]
    assert {a.json()["reason"] for a in answers[1:]} == {"capacity"} and all(a.json()["queued"] for a in answers[1:])
    assert all(int(a.headers["Retry-After"]) >= 1 for a in answers[1:])

    engine = make_engine(stack.settings.ledger_url())
    capacity = CapacityLedger(engine)
    observed = []
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        observed.append(capacity.counters().get(KEY, 0))
        with Session(engine) as s:
            done = [v for v in s.exec(select(WorkVersion)) if v.status == "done"]
        if len(done) == 3:
            break
        time.sleep(0.2)
    assert len(done) == 3, f"only {len(done)} of 3 runs finished"
    assert max(observed) == 1
    # a run's version is recorded done a moment before its workflow's release activity runs
    assert wait_for(lambda: capacity.counters().get(KEY, 0) == 0, timeout=30), capacity.counters()

    intervals = []
    for v in done:
        accepted = [r for r in _receipts(engine, v.work_key) if r.outcome == "accept"]
        assert len(accepted) == 1
        intervals.append((as_utc(accepted[0].created_at), as_utc(v.updated_at), v.work_key))
    intervals.sort()
    for (_, end, a), (start, _, b) in pairwise(intervals):
        assert start >= end - timedelta(milliseconds=50), f"{b} started before {a} ended"
    for work_key in ("acme/github:acme/api#45:review", "acme/github:acme/api#46:review"):
        outcomes = [(r.outcome, r.reason) for r in _receipts(engine, work_key)]
        assert outcomes[0] == ("defer", "capacity") and outcomes[-1] == ("accept", "admitted")
    with Session(engine) as s:
        assert {i.status for i in s.exec(select(DeferredItem))} == {"admitted"}
    engine.dispose()


def test_slots_of_a_terminated_run_are_reaped_and_the_queue_moves(stack_factory):
    stack = stack_factory(SLUICEGATE__CAPACITY__CONCURRENCY_LIMIT="1")
    web = StackHttp(stack)
    web.model_fault(delay_seconds=120, times=1)  # the first run hangs in its first model call
    assert web.send_opened("acme/api", 42).json()["outcome"] == "accept"
    assert wait_for(lambda: httpx.get(f"{web.model}/_sim/stats").json()["calls"] >= 1, timeout=30)
    assert web.send_opened("acme/api", 44).json()["reason"] == "capacity"

    async def terminate_and_reap() -> DispatchResult:
        client = await connect(stack.settings)
        await client.get_workflow_handle("agent/acme/github:acme/api#42:review").terminate("operator drill")
        return await client.execute_workflow(
            REAP_WORKFLOW, ReapRequest(0.0, DispatchRequest()), id="reap-drill", result_type=DispatchResult,
            task_queue=stack.settings.temporal.task_queue, execution_timeout=timedelta(minutes=2))

    result = asyncio.run(terminate_and_reap())
    assert result.released == ["acme/github:acme/api#42:review"]
    assert result.admitted == ["acme/github:acme/api#44:review"]
    # Not wait_for_runs: the terminated run #42 never records an end of its own (nothing runs it),
    # so waiting for every version to finish sat out the whole timeout (~2 min of this test).
    engine = make_engine(stack.settings.ledger_url())

    def status_of_44() -> str | None:
        with Session(engine) as s:
            return s.exec(select(WorkVersion.status).where(
                WorkVersion.work_key == "acme/github:acme/api#44:review")).first()
    assert wait_for(lambda: status_of_44() == "done", timeout=120), status_of_44()
    capacity = CapacityLedger(engine)  # the second run gives its slot back too, right after it is done
    assert wait_for(lambda: capacity.counters().get(KEY, 0) == 0, timeout=30), capacity.counters()
    engine.dispose()
    # The terminated run's model call is still held by the simulator (its worker attempt is running):
    # answer it, so the worker stops at once instead of waiting out its graceful window.
    web.release_model_delays()


def test_model_breaker_opens_on_429s_defers_intake_and_lets_work_back_after(stack_factory):
    stack = stack_factory(SLUICEGATE__CAPACITY__BREAKER__FAILURE_THRESHOLD="3",
                          SLUICEGATE__CAPACITY__BREAKER__OPEN_SECONDS="6",
                          SLUICEGATE__CAPACITY__BREAKER__RAMP_SECONDS="4")
    web = StackHttp(stack)
    web.model_fault(status=429, retry_after=0.2, times=3)
    assert web.send_opened("acme/api", 42).json()["outcome"] == "accept"
    engine = make_engine(stack.settings.ledger_url())
    from ledger import BreakerBoard
    board = BreakerBoard(engine, stack.settings.capacity.breaker_policy())
    assert wait_for(lambda: any(b.opened_at for b in board.states()), timeout=60), "breaker never opened"
    time.sleep(1.2)  # the API caches breaker state for a second
    deferred = web.send_opened("acme/api", 44).json()
    assert (deferred["outcome"], deferred["reason"]) == ("defer", "breaker-open")
    assert deferred["retry_after_seconds"] >= 1

    opened_at = next(b.opened_at for b in board.states() if b.opened_at)

    async def dispatch(n: int) -> DispatchResult:
        client = await connect(stack.settings)
        return await client.execute_workflow(
            DISPATCH_WORKFLOW, DispatchRequest(), id=f"dispatch-drill-{n}", result_type=DispatchResult,
            task_queue=stack.settings.temporal.task_queue, execution_timeout=timedelta(minutes=2))

    def item() -> DeferredItem:
        with Session(engine) as s:
            return s.exec(select(DeferredItem)).one()

    n = 0
    while item().status == "waiting" and n < 60:  # the scheduled dispatcher's job, done by hand here
        n += 1
        asyncio.run(dispatch(n))
        time.sleep(0.5)
    assert item().status == "admitted"
    [accept] = [r for r in _receipts(engine, "acme/github:acme/api#44:review") if r.outcome == "accept"]
    assert as_utc(accept.created_at) >= opened_at + timedelta(seconds=6)  # not before the breaker's open time
    versions = {v.work_key: v.status for v in wait_for_runs(stack.settings, timeout=120)}
    assert versions == {"acme/github:acme/api#42:review": "done", "acme/github:acme/api#44:review": "done"}
    engine.dispose()
