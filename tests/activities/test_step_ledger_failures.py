"""``StepLedger.answered``'s two transactions in one thread hop: the journal write, then the settle.

Real parts: the SQL ledger (both backends) and an unmigrated SQLite file as the ledger that fails
(its tables do not exist: every statement on it raises), in Temporal's ``ActivityEnvironment``.
"""

from __future__ import annotations

import uuid

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

import ledger
from activities.step_ledger import SpendGuard, StepLedger
from ledger import DayBudgets, ModelJournal, ReservationStatus
from workflows.contracts import ModelRequest, ModelResponse, Price, TokenUsage

MODEL = "sim-reviewer-1"
PRICE = Price(input=1.25, cached_input=0.125, output=10.0, reasoning=10.0)


def _request() -> ModelRequest:
    return ModelRequest(f"acme/github:acme/steps#{uuid.uuid4().int % 10**6}:review", "v1", MODEL,
                        [{"role": "user", "content": "Review it."}], [], tenant="acme", generation=2, step=1)


def _answer() -> ModelResponse:
    return ModelResponse("resp-1", "looks fine", [], "stop", TokenUsage(input=100, output=20), attempt=1)


@pytest.fixture
def broken(tmp_path):
    """An engine on a ledger file without its schema: every journal or budget statement fails."""
    engine = ledger.make_engine(f"sqlite:///{tmp_path / 'no-schema.sqlite'}")
    yield engine
    engine.dispose()


def _reserve(budgets: DayBudgets, req: ModelRequest) -> str:
    return budgets.reserve("acme", req.work_key, 1.0, reservation_id=f"r-{uuid.uuid4().hex}")


async def test_a_failed_settle_after_the_journal_write_is_retryable_and_the_answer_stays_journaled(engine, broken):
    req, journal = _request(), ModelJournal(engine)
    rid = _reserve(DayBudgets(engine, 1000.0, {}, 1000.0), req)
    steps = StepLedger(SpendGuard(DayBudgets(broken, 1000.0, {}, 1000.0), {MODEL: PRICE}, 2048), journal)
    with pytest.raises(ApplicationError) as err:
        await ActivityEnvironment().run(steps.answered, req, rid, _answer(), 1)
    assert err.value.type == "BudgetSettleFailed" and not err.value.non_retryable
    entry = journal.find(req.work_key, "v1", 2, 1)
    assert entry is not None and entry.response["response_id"] == "resp-1" and entry.reservation_id == rid


async def test_a_failed_journal_write_still_settles_and_returns_the_answer(engine, broken):
    req, budgets = _request(), DayBudgets(engine, 1000.0, {}, 1000.0)
    rid = _reserve(budgets, req)
    steps = StepLedger(SpendGuard(budgets, {MODEL: PRICE}, 2048), ModelJournal(broken))
    answer = await ActivityEnvironment().run(steps.answered, req, rid, _answer(), 1)
    assert answer.response_id == "resp-1"
    held = budgets.reservation(rid)
    assert held is not None and held.status == ReservationStatus.SETTLED and held.spent_usd == pytest.approx(
        SpendGuard(budgets, {MODEL: PRICE}, 2048).cost_of(req, answer))
    assert ModelJournal(engine).find(req.work_key, "v1", 2, 1) is None
