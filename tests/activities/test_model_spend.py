"""The model activity's money and journal, on SQLite and PostgreSQL.

Real parts: the model simulator over HTTP through the real ``openai`` client, the SQL ledger,
the real ``ModelActivities`` run in Temporal's ``ActivityEnvironment`` with the attempt numbers
the server would give. A crash is what it leaves in the ledger: a reservation never ended, or a
journaled answer whose activity never reported back.
"""

from __future__ import annotations

import asyncio
import dataclasses
import socket
import uuid

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.keys import request_digest, reservation_id
from activities.model import ModelActivities
from activities.model_credentials import openai_client
from activities.step_ledger import SpendGuard
from ledger import (
    BudgetReservation, DayBudgets, KillSwitch, ModelJournal, ModelJournalEntry, ReservationStatus, StepRef,
)
from tests.support.sims import MODEL_KEY
from workflows.contracts import ModelRequest, Price
from workflows.review_task import TOOLS

MODEL = "sim-reviewer-1"
PRICE = Price(input=1.25, cached_input=0.125, output=10.0, reasoning=10.0)


def _request(step: int = 1) -> ModelRequest:
    key = f"acme/github:acme/spend#{uuid.uuid4().int % 10**6}:review"
    return ModelRequest(key, "v1", MODEL, [{"role": "user", "content": "Review pull request acme/spend."}],
                        TOOLS, tenant=f"t-{uuid.uuid4().hex[:8]}", generation=3, step=step)


def _env(attempt: int) -> ActivityEnvironment:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, attempt=attempt, workflow_run_id="run-1")
    return env


class Harness:
    def __init__(self, engine, base_url: str, timeout: float = 10.0) -> None:
        self.budgets = DayBudgets(engine, 1000.0, {}, 1000.0)
        self.journal = ModelJournal(engine)
        self.kills = KillSwitch(engine)
        self.spend = SpendGuard(self.budgets, {MODEL: PRICE}, 2048)
        self.client = openai_client(base_url, MODEL_KEY, timeout)
        self.activities = ModelActivities(self.client, self.kills, self.spend, None, self.journal)
        self._engine = engine

    async def call(self, req: ModelRequest, attempt: int = 1):
        return await _env(attempt).run(self.activities.chat_completion, req)

    def reservations(self, req: ModelRequest) -> list[BudgetReservation]:
        from sqlmodel import Session, select

        with Session(self._engine) as s:
            return list(s.exec(select(BudgetReservation).where(BudgetReservation.work_key == req.work_key)
                               .order_by(BudgetReservation.created_at)))

    def rid(self, req: ModelRequest, attempt: int) -> str:
        return reservation_id(req.work_key, req.input_version, req.generation, req.step, "run-1", attempt)


@pytest.fixture
async def harness(engine, sims):
    sims.reset()
    h = Harness(engine, f"{sims.model.base_url}/v1")
    yield h
    await h.client.close()


def _calls(sims, req: ModelRequest) -> int:
    return sims.model_stats()["by_work"].get(f"{req.work_key}@{req.input_version}", 0)


async def test_an_answer_is_journaled_and_settled_inside_its_reservation(harness, sims):
    req = _request()
    response = await harness.call(req)
    [r] = harness.reservations(req)
    entry = harness.journal.find(req.work_key, "v1", 3, 1)
    assert (r.id, r.status, r.step, r.attempt) == (harness.rid(req, 1), ReservationStatus.SETTLED, 1, 1)
    assert r.spent_usd == pytest.approx(harness.spend.cost_of(req, response)) and 0 < r.spent_usd <= r.amount_usd
    assert entry.reservation_id == r.id and entry.response["response_id"] == response.response_id
    assert entry.request_digest == request_digest(req.messages, req.tools, req.model)
    assert _calls(sims, req) == 1


async def test_a_retried_attempt_returns_the_journaled_answer_without_a_call_or_a_reservation(harness, sims):
    req = _request()
    first = await harness.call(req, attempt=1)  # the worker then died before Temporal heard of it
    again = await harness.call(req, attempt=2)
    assert (again.response_id, again.tool_calls, again.usage) == (first.response_id, first.tool_calls, first.usage)
    assert again.attempt == 2 and _calls(sims, req) == 1
    assert [r.attempt for r in harness.reservations(req)] == [1]


async def test_a_failed_settle_is_retried_alone_from_the_journal(harness, sims):
    """Attempt 1 journaled its answer and died (or its settle failed) before settling."""
    req = _request()
    rid = harness.rid(req, 1)
    harness.budgets.reserve(req.tenant, req.work_key, 0.5, reservation_id=rid,
                            ref=StepRef(req.work_key, "v1", 3, 1, 1))
    answer = {"response_id": "chatcmpl-journaled", "content": None, "finish_reason": "tool_calls", "attempt": 1,
              "tool_calls": [{"id": "c1", "name": "get_pull_request_diff", "arguments": "{}"}],
              "usage": {"input": 100, "cached_input": 0, "output": 20, "reasoning": 0}}
    harness.journal.record(ModelJournalEntry(
        work_key=req.work_key, input_version="v1", generation=3, step=1, attempt=1, reservation_id=rid,
        request_digest=request_digest(req.messages, req.tools, req.model), response=answer, cost_usd=0.000325,
        created_at=harness.budgets.reservation(rid).created_at))
    response = await harness.call(req, attempt=2)
    assert response.response_id == "chatcmpl-journaled" and response.tool_calls[0].name == "get_pull_request_diff"
    assert _calls(sims, req) == 0
    [r] = harness.reservations(req)
    assert (r.status, r.spent_usd) == (ReservationStatus.SETTLED, 0.000325) and "from the journal" in r.note


async def test_an_attempt_lost_mid_call_is_charged_at_its_estimate_by_the_next(harness, sims):
    req = _request()
    lost = harness.budgets.reserve(req.tenant, req.work_key, 0.5, reservation_id=harness.rid(req, 1),
                                   ref=StepRef(req.work_key, "v1", 3, 1, 1))  # worker died mid-call
    await harness.call(req, attempt=2)
    first, second = harness.reservations(req)
    assert (first.id, first.status, first.spent_usd) == (lost, ReservationStatus.ESTIMATED, 0.5)
    assert (second.attempt, second.status) == (2, ReservationStatus.SETTLED) and _calls(sims, req) == 1


async def test_a_timeout_after_sending_is_charged_at_the_estimate(engine, sims):
    sims.reset()
    sims.model_ctl("POST", "/faults", json={"delay_seconds": 2, "times": 1})
    harness = Harness(engine, f"{sims.model.base_url}/v1", timeout=0.5)
    req = _request()
    with pytest.raises(ApplicationError) as failed:
        await harness.call(req)
    await harness.client.close()
    [r] = harness.reservations(req)
    assert failed.value.type == "ModelUnavailable" and _calls(sims, req) == 1
    assert (r.status, r.spent_usd) == (ReservationStatus.ESTIMATED, r.amount_usd) and "ReadTimeout" in r.note


@pytest.mark.parametrize("status, ended", [(400, ReservationStatus.RELEASED), (429, ReservationStatus.RELEASED),
                                           (500, ReservationStatus.ESTIMATED), (503, ReservationStatus.ESTIMATED)])
async def test_a_refusal_is_released_and_a_server_error_is_charged(harness, sims, status, ended):
    sims.model_ctl("POST", "/faults", json={"status": status, "times": 1})
    req = _request()
    with pytest.raises(ApplicationError):
        await harness.call(req)
    [r] = harness.reservations(req)
    assert (r.status, r.spent_usd) == (ended, 0.0 if ended == ReservationStatus.RELEASED else r.amount_usd)
    assert str(status) in r.note


async def test_a_refused_connection_is_released(engine):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    harness = Harness(engine, f"http://127.0.0.1:{port}/v1")
    req = _request()
    with pytest.raises(ApplicationError) as failed:
        await harness.call(req)
    await harness.client.close()
    [r] = harness.reservations(req)
    assert failed.value.type == "ModelUnavailable"
    assert (r.status, r.spent_usd) == (ReservationStatus.RELEASED, 0.0) and "ConnectError" in r.note


async def test_a_cancelled_attempt_is_charged_at_the_estimate(harness, sims):
    sims.model_ctl("POST", "/faults", json={"delay_seconds": 3, "times": 1})
    req = _request()
    env = _env(1)
    call = asyncio.create_task(env.run(harness.activities.chat_completion, req))
    while _calls(sims, req) == 0:
        await asyncio.sleep(0.02)
    env.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    [r] = harness.reservations(req)
    assert (r.status, r.spent_usd) == (ReservationStatus.ESTIMATED, r.amount_usd) and "Cancelled" in r.note


async def test_a_kill_or_a_full_day_budget_reserves_nothing_and_calls_nothing(harness, sims, engine):
    req = _request()
    harness.kills.kill("work_key", req.work_key, "alice", "stop")
    with pytest.raises(ApplicationError) as killed:
        await harness.call(req)
    poor = _request()
    broke = ModelActivities(harness.client, None, SpendGuard(DayBudgets(engine, 1000.0, {}, 0.0), {MODEL: PRICE},
                                                               2048), None, harness.journal)
    with pytest.raises(ApplicationError) as refused:
        await _env(1).run(broke.chat_completion, poor)
    assert (killed.value.type, refused.value.type) == ("Killed", "DayBudgetExceeded")
    assert harness.reservations(req) == harness.reservations(poor) == []
    assert _calls(sims, req) == _calls(sims, poor) == 0
