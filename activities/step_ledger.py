"""The ledger side of one model-call attempt: journal first, then the day-budget reservation.

Order of an attempt (``activities.model``), and why:

1. **journal hit** — the step was answered before (an earlier attempt got the answer, then its
   worker died or its settle failed): settle that answer's reservation, charge earlier attempts
   that never ended, return the journaled answer. No reservation, no provider call.
2. **reserve** — earlier attempts of the step still holding money ended without a word (worker
   lost): charge them at their estimate, then hold this attempt's worst case under its own id
   (``activities.keys.reservation_id``; a retried reserve of the same id holds nothing twice).
3. the provider call; a failure ends the reservation by its fate (``activities.call_fate``):
   released when proven unbilled, charged at its estimate otherwise.
4. **answered** — journal the answer (the first answer for a request wins), then settle. A
   failed settle raises a retryable ``BudgetSettleFailed``: the next attempt finds the journal
   and retries only the settle. A failed journal write does not raise (that would call the
   provider again): the answer is returned, history keeps it, and its reservation is left to
   the stale sweep.

Requests without a step (``step == 0``, scheduled before steps existed) are neither looked up
nor journaled and get a random reservation id, as before.
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

from sqlalchemy.engine import Connection
from temporalio import activity
from temporalio.converter import value_to_type
from temporalio.exceptions import ApplicationError

from activities.call_fate import Fate, fate_of
from activities.keys import request_digest, reservation_id
from ledger import DayBudgetExceeded, DayBudgets, ModelJournal, ModelJournalEntry, StepRef
from workflows.budget import cost_usd, prompt_token_bound, step_worst_case_usd
from workflows.contracts import ModelRequest, ModelResponse, Price
from workflows.kinds import FailureType


@dataclass(frozen=True)
class SpendGuard:
    """Day budgets and the prices and output cap that bound one step's cost."""

    budgets: DayBudgets
    prices: dict[str, Price]
    step_max_output_tokens: int

    def worst_case_usd(self, req: ModelRequest) -> float:
        return step_worst_case_usd(prompt_token_bound(req.messages, req.tools), self.step_max_output_tokens,
                                   self.prices[req.model])

    def cost_of(self, req: ModelRequest, response: ModelResponse) -> float:
        return cost_usd(response.usage, self.prices[req.model])


def step_ref(req: ModelRequest, attempt: int) -> StepRef:
    return StepRef(req.work_key, req.input_version, req.generation, req.step, attempt)


class StepLedger:
    def __init__(self, spend: SpendGuard | None, journal: ModelJournal | None) -> None:
        self._spend = spend
        self._journal = journal

    def _journaled_step(self, req: ModelRequest) -> bool:
        return self._journal is not None and req.step > 0

    def find(self, req: ModelRequest, conn: Connection | None = None) -> ModelJournalEntry | None:
        """(Blocking; run in a thread.) The step's journal entry, whatever request it answers; ``conn``:
        a ``single_read`` connection the caller holds (used if it is the journal's engine's)."""
        if self._journal is None or not self._journaled_step(req):
            return None
        return self._journal.find(req.work_key, req.input_version, req.generation, req.step, conn)

    async def journaled(self, req: ModelRequest, attempt: int,
                        entry: ModelJournalEntry | None) -> ModelResponse | None:
        """The answer an earlier attempt journaled for this very request (``entry``, from :meth:`find`),
        its reservation settled."""
        if entry is None or entry.request_digest != request_digest(req.messages, req.tools, req.model):
            return None
        if self._spend is not None:
            if entry.reservation_id:
                await asyncio.to_thread(self._spend.budgets.settle, entry.reservation_id, entry.cost_usd,
                                        f"answered to attempt {entry.attempt}; settled by attempt {attempt} "
                                        "from the journal")
            if attempt > 1:
                await asyncio.to_thread(self._spend.budgets.charge_abandoned, step_ref(req, attempt))
        response = value_to_type(ModelResponse, entry.response)
        response.attempt = attempt
        return response

    async def reserve(self, req: ModelRequest, attempt: int) -> str | None:
        if self._spend is None:
            return None
        ref = step_ref(req, attempt)
        rid = None
        if req.step > 0:
            if attempt > 1:  # no earlier attempt to charge: no thread hop
                await asyncio.to_thread(self._spend.budgets.charge_abandoned, ref)
            rid = reservation_id(req.work_key, req.input_version, req.generation, req.step,
                                 activity.info().workflow_run_id or "", attempt)
        amount = self._spend.worst_case_usd(req)
        try:
            return await asyncio.to_thread(self._spend.budgets.reserve, req.tenant or "-", req.work_key, amount,
                                           reservation_id=rid, ref=ref)
        except DayBudgetExceeded as exc:
            raise ApplicationError(str(exc), type=FailureType.DAY_BUDGET_EXCEEDED, non_retryable=True) from None

    async def unanswered(self, rid: str | None, exc: BaseException) -> None:
        """End the reservation of a call that raised: released if proven unbilled, else its estimate."""
        if rid is None or self._spend is None:  # a reservation id comes only from a spend guard
            return
        fate, why = fate_of(exc)
        budgets = self._spend.budgets
        end = budgets.release if fate == Fate.UNBILLED else budgets.charge_estimate
        try:
            await asyncio.to_thread(end, rid, why if fate == Fate.UNBILLED else f"fate unknown: {why}")
        except Exception as err:  # noqa: BLE001 - the call's own error matters; the sweep ends it
            activity.logger.warning("could not end reservation %s (%s): %r; the stale sweep will", rid, why, err)

    async def answered(self, req: ModelRequest, rid: str | None, response: ModelResponse,
                       attempt: int) -> ModelResponse:
        """Journal the answer, then settle its reservation; returns the journal's answer.

        Two transactions on purpose (in one thread hop): the journal write commits before the settle may wait on the
        reservation's row (a sweep or a retry holding it), so a worker lost while it waits leaves
        the answer journaled and the next attempt returns it without calling the provider again
        (``tests/e2e/test_worker_crash.py``)."""
        cost = self._spend.cost_of(req, response) if self._spend else 0.0
        entry = None
        if self._journal is not None and self._journaled_step(req):
            entry = ModelJournalEntry(
                work_key=req.work_key, input_version=req.input_version, generation=req.generation, step=req.step,
                request_digest=request_digest(req.messages, req.tools, req.model), response=asdict(response),
                cost_usd=cost, reservation_id=rid, attempt=attempt, created_at=datetime.now(UTC))
        stored, journal_error, settle_error = await asyncio.to_thread(self._journal_then_settle, entry, rid, cost)
        if journal_error is not None:  # never call the provider again for a journal failure
            activity.logger.error("could not journal the answer to %s step %d (%r); returning it anyway",
                                  req.work_key, req.step, journal_error, extra={"work_key": req.work_key})
        if stored is not None:
            response = _as_answer(stored, response, attempt)
        if settle_error is not None:
            if stored is not None:  # the next attempt finds the journal and retries only the settle
                raise ApplicationError(f"could not settle reservation {rid}: {settle_error!r}",
                                       type="BudgetSettleFailed") from None
            activity.logger.error("could not settle reservation %s (%r); the stale sweep will", rid, settle_error)
        return response

    def _journal_then_settle(self, entry: ModelJournalEntry | None, rid: str | None, cost: float
                             ) -> tuple[ModelJournalEntry | None, Exception | None, Exception | None]:
        """In a worker thread, one hop for both, still two transactions in this order: the journal
        write commits before the settle begins (which may wait on the reservation's row). Returns the
        journal's row (None: not journaled) and each one's error, for :meth:`answered` to act on."""
        stored, journal_error, settle_error = None, None, None
        if entry is not None and self._journal is not None:
            try:
                stored = self._journal.record(entry)
            except Exception as err:  # noqa: BLE001 - reported by answered(); the answer is returned anyway
                journal_error = err
        if rid is not None and self._spend is not None:  # a reservation id comes only from a spend guard
            try:
                self._spend.budgets.settle(rid, cost)
            except Exception as err:  # noqa: BLE001 - answered() raises or logs it
                settle_error = err
        return stored, journal_error, settle_error


def _as_answer(stored: ModelJournalEntry, response: ModelResponse, attempt: int) -> ModelResponse:
    """The journal's answer for this attempt: ``response`` unless a racing attempt answered first (one
    answer per step)."""
    if stored.attempt == attempt:
        return response
    answer = value_to_type(ModelResponse, stored.response)
    answer.attempt = attempt
    return answer
