"""Drill: backlog after a model outage. One command:

    .venv/bin/python -m pytest tests/e2e/test_backlog_drill.py

The model provider answers 503 to everything; the breaker opens; every delivery during the
outage is deferred into the queue (no model call is spent on it); the provider recovers; the
breaker ramps and the scheduled dispatcher drains the backlog without ever exceeding the
(ramped) global limit; every pull request ends reviewed exactly once.
"""

from __future__ import annotations

import asyncio
import math
import time

import httpx
import pytest
from sqlmodel import Session, select

from demo.outcome import wait_for_runs
from intake.capacity import breaker_gate
from ledger import BreakerBoard, CapacityLedger, DeferredItem, make_engine
from sluicegate.devstack import wait_for
from sluicegate.temporal.schedules import DISPATCH_SCHEDULE, REAP_SCHEDULE, apply_schedules
from sluicegate.temporal.client import connect
from tests.e2e.conftest import StackHttp

pytestmark = pytest.mark.e2e
GLOBAL_LIMIT = 3
BACKLOG = (45, 46, 47, 48, 49, 50)


def test_backlog_after_a_model_outage_drains_gradually_and_completely(stack_factory):
    stack = stack_factory(SLUICEGATE__CAPACITY__GLOBAL_ACTIVE_RUNS=str(GLOBAL_LIMIT),
                          SLUICEGATE__CAPACITY__BREAKER__FAILURE_THRESHOLD="3",
                          SLUICEGATE__CAPACITY__BREAKER__OPEN_SECONDS="10",  # room to send the backlog while open
                          SLUICEGATE__CAPACITY__BREAKER__RAMP_SECONDS="8",
                          SLUICEGATE__CAPACITY__DISPATCH_INTERVAL_SECONDS="1")
    s, web = stack.settings, StackHttp(stack)
    asyncio.run(_apply(s))
    for n in BACKLOG:
        httpx.post(f"{web.forge}/_sim/pulls/acme/api/{n}", json={
            "state": "open", "head_sha": f"{n:040x}", "diff": f"diff --git a/f{n} b/f{n}\n+{n}\n"}).raise_for_status()

    web.model_fault(status=503, times=None)  # the outage
    assert web.send_opened("acme/api", 42).json()["outcome"] == "accept"
    engine = make_engine(s.ledger_url())
    board = BreakerBoard(engine, s.capacity.breaker_policy())
    assert wait_for(lambda: any(b.opened_at for b in board.states()), timeout=60), "breaker never opened"
    time.sleep(1.2)  # the API's breaker cache
    calls_before = httpx.get(f"{web.model}/_sim/stats").json()["calls"]
    answers = [web.send_opened("acme/api", n).json() for n in BACKLOG]
    assert {(a["outcome"], a["reason"], a["queued"]) for a in answers} == {("defer", "breaker-open", True)}

    httpx.delete(f"{web.model}/_sim/faults").raise_for_status()  # the provider recovers
    web.model_fault(delay_seconds=0.3, times=None)  # runs take a moment, so they overlap
    capacity = CapacityLedger(engine)
    samples: list[tuple[int, int | None]] = []
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        views = [breaker_gate(b, _now(), board.policy) for b in board.states()]
        ramp = [v.ramp_fraction for v in views if v.state == "ramping"]
        bound = max(1, math.ceil(GLOBAL_LIMIT * max(ramp))) if ramp else GLOBAL_LIMIT
        samples.append((capacity.counters().get("global", 0), bound))
        with Session(engine) as db:
            items = list(db.exec(select(DeferredItem)))
        if items and all(i.status != "waiting" for i in items) and capacity.counters().get("global", 0) == 0:
            break
        time.sleep(0.1)
    assert {i.status for i in items} == {"admitted"}, [(i.work_key, i.status, i.last_error) for i in items]
    assert max(active for active, _ in samples) <= GLOBAL_LIMIT
    assert all(active <= bound + 1 for active, bound in samples)  # +1: a run admitted just before the sample's ramp step
    versions = wait_for_runs(s, timeout=120)
    assert {v.work_key for v in versions if v.status == "done"} >= {f"acme/github:acme/api#{n}:review" for n in BACKLOG}
    comments = web.comments()
    assert len(comments) == len({c["body"] for c in comments})  # no review posted twice
    during = httpx.get(f"{web.model}/_sim/stats").json()["calls"] - calls_before
    assert during >= len(BACKLOG)  # the backlog's reviews happened after the outage, not during it
    engine.dispose()


def _now():
    from ledger._sql import utcnow
    return utcnow()


async def _apply(settings) -> None:
    await apply_schedules(await connect(settings), settings, only=[DISPATCH_SCHEDULE, REAP_SCHEDULE])
