"""AgentLoopWorkflow: one workflow per work key, running admitted work orders in order.

Deterministic by construction: no clock, randomness or I/O here — model and tool calls
are activities whose results live in history, so a replay after a crash never calls the
model again. Work orders arrive by signal (signal-with-start from intake); the handler
ignores a generation it has already seen, so a re-sent signal cannot queue work twice.
Before every step the task budget is checked; a run stopped by it ends with status
``budget_exhausted`` and makes no further model call. Activity failures that exhaust
their retry policy end the order with status ``failed`` and a reason naming the cause,
never a workflow-task failure that would retry forever.

Supersede (patch ``supersede-at-step-boundary``): when a newer generation of the work key
is pending, the current order stops at its next step boundary — before a model call or a
tool call — with status ``superseded`` and the newer order runs next. A tool activity of
the old generation already in flight is refused by the ledger's fencing. Histories
recorded before the patch replay on the old path (orders strictly in arrival order).

Generations only move forward (patch ``claim-order-at-start``, ``workflows/claims.py``): before
its first step an order asks the ledger whether it may still run; an older generation than the
newest seen ends ``superseded`` without a model call, and an admission that already ended (a
relay signal that arrived after the run completed) is ``skipped``.

Kill switch: the ``kill`` signal stops the run before its next step (status ``killed``);
independently, the model activity and the tool gateway refuse every call while a kill is
recorded in the ledger, so a kill also lands on an activity already running or a retry.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, RetryState

with workflow.unsafe.imports_passed_through():
    from workflows.failures import failure_type
    from workflows.state import StateSchemaError, upgrade_state
    from workflows import search_attributes as sa
    from workflows.budget import cost_usd, exhausted
    from workflows.contracts import (
        AGENT_WORKFLOW, KILL_SIGNAL, PROGRESS_QUERY, STATE_SCHEMA_VERSION, WORK_ORDER_SIGNAL, AgentLoopResult,
        AgentLoopState, KillNotice, AgentLoopStart, ModelRequest,
        ModelResponse, RunOutcome, ToolCall, ToolRequest, ToolResult, WorkOrder,
    )
    from workflows.review_task import TOOL_ACTIVITIES, TOOLS, initial_messages
    from workflows.capacity_contracts import ReleaseRequest
    from workflows.claims import ClaimVerdict
    from workflows.order_claim import CLAIM_ORDER_PATCH, claim_order, unrun_outcome

SUPERSEDE_PATCH = "supersede-at-step-boundary"
CONTINUE_AS_NEW_PATCH = "continue-as-new-between-orders"
RELEASE_CAPACITY_PATCH = "release-capacity-at-end"
RELEASE_CAPACITY_ACTIVITY = "sluicegate.capacity.release"
MAX_RECENT_OUTCOMES = 20
MODEL_ACTIVITY = "sluicegate.model.chat_completion"
RECORD_OUTCOME_ACTIVITY = "sluicegate.ledger.record_run_outcome"
NON_RETRYABLE_MODEL_ERRORS = ["ModelRequestRejected", "DayBudgetExceeded", "Killed"]
RECORD_OUTCOME_RETRY = RetryPolicy(maximum_attempts=10, maximum_interval=timedelta(seconds=30))


@workflow.defn(name=AGENT_WORKFLOW)
class AgentLoopWorkflow:
    def __init__(self) -> None:
        self._pending: list[WorkOrder] = []
        self._seen_generations: set[int] = set()
        self._current: WorkOrder | None = None
        self._steps = 0
        self._finished: list[RunOutcome] = []
        self._kill: KillNotice | None = None

    @workflow.signal(name=WORK_ORDER_SIGNAL)
    def work_order(self, order: WorkOrder) -> None:
        if order.generation in self._seen_generations:
            workflow.logger.info("ignoring re-sent work order generation %s", order.generation,
                                 extra={"work_key": order.work_key})
            return
        self._seen_generations.add(order.generation)
        self._pending.append(order)

    @workflow.signal(name=KILL_SIGNAL)
    def kill(self, notice: KillNotice) -> None:
        """Stop before the next step; every pending order ends ``killed`` too."""
        if self._kill is None:
            self._kill = notice

    @workflow.query(name=PROGRESS_QUERY)
    def progress(self) -> dict[str, Any]:
        return {
            "current": self._current.input_version if self._current else None,
            "steps": self._steps,
            "pending": [o.input_version for o in self._pending],
            "finished": [(o.input_version, o.status) for o in self._finished],
        }

    @workflow.run
    async def run(self, start: AgentLoopStart) -> AgentLoopResult:
        if start.state is not None:
            self._restore(start.state)
        await workflow.wait_condition(lambda: bool(self._pending), timeout=timedelta(minutes=10))
        orders_this_run = 0
        while True:
            while self._pending:
                order = self._pending.pop(0)
                self._current = order
                outcome = await self._run_order(order)
                self._finished.append(outcome)
                self._current = None
                orders_this_run += 1
                if self._pending and self._should_continue_as_new(start, orders_this_run):
                    await workflow.wait_condition(workflow.all_handlers_finished)
                    workflow.continue_as_new(AgentLoopStart(start.work_key, start.tenant, self._snapshot(),
                                                            start.max_orders_per_run))
            if self._finished and workflow.patched(RELEASE_CAPACITY_PATCH):
                await self._release_capacity(start.work_key)
            await workflow.wait_condition(workflow.all_handlers_finished)
            if not self._pending:  # an order signalled during the release runs on the slots it reused
                break
        return AgentLoopResult(work_key=start.work_key, orders=list(self._finished))

    async def _release_capacity(self, work_key: str) -> None:
        """Give the run's capacity slots back (those taken up to its newest generation) and let the
        deferred queue into the room. A run that never gets here (terminated) is reaped."""
        newest = max(o.generation for o in self._finished)
        try:
            await workflow.execute_activity(
                RELEASE_CAPACITY_ACTIVITY, ReleaseRequest(work_key, newest), start_to_close_timeout=timedelta(minutes=2),
                retry_policy=RetryPolicy(maximum_attempts=10, maximum_interval=timedelta(seconds=30)))
        except ActivityError as err:  # the run's work is done; never fail it for this
            workflow.logger.warning("could not release the capacity of %s (%s); the reaper will",
                                    work_key, failure_type(err), extra={"work_key": work_key})

    @staticmethod
    def _should_continue_as_new(start: AgentLoopStart, orders_this_run: int) -> bool:
        """Between orders only (an order's own history is bounded by its step cap)."""
        due = orders_this_run >= start.max_orders_per_run or workflow.info().is_continue_as_new_suggested()
        return due and workflow.patched(CONTINUE_AS_NEW_PATCH)

    def _snapshot(self) -> AgentLoopState:
        return AgentLoopState(STATE_SCHEMA_VERSION, pending=list(self._pending),
                              seen_generations=sorted(self._seen_generations),
                              recent=self._finished[-MAX_RECENT_OUTCOMES:], kill=self._kill)

    def _restore(self, carried: AgentLoopState) -> None:
        try:
            state = upgrade_state(carried)
        except StateSchemaError as exc:
            raise ApplicationError(str(exc), type="StateSchemaUnsupported", non_retryable=True) from None
        self._pending = list(state.pending) + self._pending
        self._seen_generations |= set(state.seen_generations)
        self._finished = list(state.recent)
        self._kill = self._kill or state.kill

    async def _run_order(self, order: WorkOrder) -> RunOutcome:
        if workflow.patched(CLAIM_ORDER_PATCH):
            unrun = await self._claim(order)
            if unrun is not None:
                return unrun
        self._set_status(order, "running")
        messages = initial_messages(order)
        outcome = RunOutcome(order.work_key, order.input_version, order.generation, "done", "completed",
                             run_id=workflow.info().run_id, receipt_id=order.receipt_id, tenant=order.tenant,
                             source=order.source)
        self._steps = 0
        started = workflow.now()
        while True:
            if self._killed(outcome) or self._superseded(order, outcome) or self._retry_capped(order, outcome):
                break
            elapsed = (workflow.now() - started).total_seconds()
            stop = exhausted(order.budget, outcome.steps, outcome.usage, outcome.cost_usd, elapsed)
            if stop is not None:
                outcome.status, outcome.reason = "budget_exhausted", stop
                break
            try:
                response = await self._call_model(order, messages)
            except ActivityError as err:
                kind = failure_type(err)
                self._count_failure(err, order.runtime.model_max_attempts, outcome)
                outcome.status = {"Killed": "killed", "DayBudgetExceeded": "budget_exhausted"}.get(kind, "failed")
                outcome.reason = f"model-error: {kind}"
                break
            outcome.retries += response.attempt - 1
            outcome.steps += 1
            self._steps = outcome.steps
            outcome.usage = outcome.usage.plus(response.usage)
            outcome.cost_usd = cost_usd(outcome.usage, order.price)
            messages.append(_assistant_message(response))
            if not response.tool_calls:
                break
            failed = await self._run_tools(order, response.tool_calls, messages, outcome)
            if failed is not None:
                outcome.status, outcome.reason = "failed", failed
                break
            if outcome.status in ("superseded", "killed"):
                break
        await workflow.execute_activity(
            RECORD_OUTCOME_ACTIVITY, outcome, start_to_close_timeout=timedelta(seconds=30),
            retry_policy=RECORD_OUTCOME_RETRY)
        self._set_status(order, outcome.status)
        workflow.logger.info("work order %s@%s ended: %s (%s), %d steps, %d tokens, $%.5f",
                             order.work_key, order.input_version, outcome.status, outcome.reason,
                             outcome.steps, outcome.usage.total, outcome.cost_usd,
                             extra={"work_key": order.work_key})
        return outcome

    async def _claim(self, order: WorkOrder) -> RunOutcome | None:
        """Generations only move forward: None lets the order run; otherwise it ends here without a
        model call — ``superseded`` (recorded) or ``skipped`` (its admission ended before; nothing recorded)."""
        claim = await claim_order(order, [*self._pending, *self._finished])
        if claim.verdict == ClaimVerdict.RUN:
            return None
        outcome = unrun_outcome(order, claim)
        if claim.verdict == ClaimVerdict.SUPERSEDED:
            await workflow.execute_activity(RECORD_OUTCOME_ACTIVITY, outcome,
                                            start_to_close_timeout=timedelta(seconds=30),
                                            retry_policy=RECORD_OUTCOME_RETRY)
        self._set_status(order, outcome.status)
        workflow.logger.info("work order %s@%s gen %s not run: %s", order.work_key, order.input_version,
                             order.generation, claim.reason, extra={"work_key": order.work_key})
        return outcome

    async def _call_model(self, order: WorkOrder, messages: list[dict[str, Any]]) -> ModelResponse:
        rt = order.runtime
        return await workflow.execute_activity(
            MODEL_ACTIVITY,
            ModelRequest(order.work_key, order.input_version, order.model, list(messages), TOOLS, order.tenant,
                         generation=order.generation, step=self._steps + 1),
            result_type=ModelResponse,
            start_to_close_timeout=timedelta(seconds=rt.model_start_to_close_seconds),
            heartbeat_timeout=timedelta(seconds=rt.model_heartbeat_seconds),
            retry_policy=RetryPolicy(initial_interval=timedelta(seconds=1), backoff_coefficient=2.0,
                                     maximum_interval=timedelta(seconds=30),
                                     maximum_attempts=rt.model_max_attempts,
                                     non_retryable_error_types=NON_RETRYABLE_MODEL_ERRORS))

    async def _run_tools(self, order: WorkOrder, calls: list[ToolCall], messages: list[dict[str, Any]],
                         outcome: RunOutcome) -> str | None:
        """Run the step's tool calls in order; returns a failure reason or None."""
        rt = order.runtime
        for call in calls:
            if self._killed(outcome) or self._superseded(order, outcome):
                return None
            activity_name = TOOL_ACTIVITIES.get(call.name)
            if activity_name is None:
                messages.append(_tool_message(call.id, f"error: unknown tool {call.name!r}"))
                continue
            request = ToolRequest(order.work_key, order.tenant, order.owner, order.repo, order.number,
                                  order.input_version, order.generation, call.id, call.arguments,
                                  order.effect_discriminator)
            try:
                result = await workflow.execute_activity(
                    activity_name, request, result_type=ToolResult,
                    start_to_close_timeout=timedelta(seconds=rt.tool_start_to_close_seconds),
                    heartbeat_timeout=timedelta(seconds=rt.tool_heartbeat_seconds),
                    retry_policy=RetryPolicy(initial_interval=timedelta(seconds=1),
                                             maximum_interval=timedelta(seconds=30),
                                             maximum_attempts=rt.tool_max_attempts))
            except ActivityError as err:
                self._count_failure(err, rt.tool_max_attempts, outcome)
                if failure_type(err) == "Killed":
                    outcome.status, outcome.reason = "killed", f"tool-error: {call.name}: Killed"
                    return None
                return f"tool-error: {call.name}: {failure_type(err)}"
            outcome.retries += result.attempt - 1
            if result.operation_key:
                outcome.operation_keys.append(result.operation_key)
            if result.external_id:
                outcome.external_ids.append(result.external_id)
            messages.append(_tool_message(call.id, result.content))
        return None

    @staticmethod
    def _count_failure(err: ActivityError, max_attempts: int, outcome: RunOutcome) -> None:
        """A failure that used up its retry policy spent ``max_attempts - 1`` retries."""
        if err.retry_state == RetryState.MAXIMUM_ATTEMPTS_REACHED:
            outcome.retries += max_attempts - 1
        outcome.last_error = str(err.cause or err)[:500]

    @staticmethod
    def _retry_capped(order: WorkOrder, outcome: RunOutcome) -> bool:
        cap = order.runtime.max_task_retries
        if outcome.retries <= cap:
            return False
        outcome.status, outcome.reason = "failed", f"retry-cap: {outcome.retries} retries over {cap} for the task"
        return True

    def _killed(self, outcome: RunOutcome) -> bool:
        if self._kill is None:
            return False
        outcome.status, outcome.reason = "killed", f"killed by {self._kill.actor}: {self._kill.reason}"
        return True

    def _superseded(self, order: WorkOrder, outcome: RunOutcome) -> bool:
        """At a step boundary: is a newer generation waiting? Marks ``outcome`` if so."""
        newer = [o for o in self._pending if o.generation > order.generation]
        if not newer or not workflow.patched(SUPERSEDE_PATCH):
            return False
        newest = max(newer, key=lambda o: o.generation)
        outcome.status = "superseded"
        outcome.reason = f"superseded by {newest.input_version} (generation {newest.generation})"
        return True

    def _set_status(self, order: WorkOrder, status: str) -> None:
        if order.runtime.search_attributes:
            workflow.upsert_search_attributes([sa.STATUS.value_set(status),
                                               sa.INPUT_VERSION.value_set(order.input_version)])


def _assistant_message(response: ModelResponse) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": response.content}
    if response.tool_calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in response.tool_calls]
    return message


def _tool_message(call_id: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


__all__ = ["AgentLoopWorkflow", "MODEL_ACTIVITY", "RECORD_OUTCOME_ACTIVITY"]
