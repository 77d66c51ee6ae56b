"""AgentLoopWorkflow: one workflow per work key, running admitted work orders in order.

Deterministic by construction: no clock, randomness or I/O here — model and tool calls
are activities whose results live in history, so a replay after a crash never calls the
model again. Work orders arrive by signal (signal-with-start from intake); the handler
ignores a generation it has already seen, so a re-sent signal cannot queue work twice.
Before every step the task budget is checked; a run stopped by it ends with status
``budget_exhausted`` and makes no further model call. Activity failures that exhaust
their retry policy end the order with status ``failed`` and a reason naming the cause,
never a workflow-task failure that would retry forever.

The order's task (its work key's suffix) picks the prompt and tools (``workflows/loop_plan.py``,
``docs/tasks.md``); a review order takes the same path as before the task registry.

Kill switch: the ``kill`` signal stops the run before its next step (status ``killed``); the model
activity and the tool gateway also refuse every call while a kill is recorded in the ledger.

Patches (each keeps histories recorded before it on the old path; tests/workflows/test_replay.py):
``supersede-at-step-boundary`` — a newer pending generation stops the current order at its next
step boundary, ``superseded`` (a tool call of the old generation in flight is refused by the
ledger's fencing); ``claim-order-at-start`` — generations only move forward, an older one ends
``superseded``, an admission that already ended ``skipped`` (``workflows/claims.py``);
``read-artifact-tool`` — the model is offered ``read_artifact`` (``workflows/review_task.py``);
``memo-cost-so-far`` — status and cost so far upserted to the memo (``workflows/run_memo.py``);
``policy-first-step`` (+ ``-fail-closed``) — an order admitted under another policy version is
re-checked before its first step and ends ``skipped`` if refused or uncheckable
(``workflows/policy_step.py``); ``cancel-is-an-outcome`` — a cancel from the Temporal UI or the CLI
cancels the step in flight, ends every order ``cancelled`` with who and why, gives the capacity
back in a scope that cannot be cancelled and closes the workflow CANCELED
(``workflows/cancellation.py``, ``workflows/order_end.py``); ``lean-loop-steps`` — one marker stands
for all of those, the ledger bookkeeping runs as local activities (``workflows/lean_steps.py``);
``memo-changes-only`` — stands for ``lean-loop-steps``, and a memo upsert carries only the fields
that changed (same file); ``lean-loop-steps-2`` — stands for ``memo-changes-only``; the claim says
whether the policy is unchanged (then no re-check is run), and a step's cost-so-far upsert waits for
``activities.memo_cost_interval_seconds`` since the last memo upsert (same file).
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError

with workflow.unsafe.imports_passed_through():
    from workflows.failures import count_failure, failure_type
    from workflows.kinds import FailureType
    from workflows.state import StateSchemaError, upgrade_state
    from workflows import search_attributes as sa
    from workflows.budget import cost_usd, exhausted
    from workflows.contracts import (
        AGENT_WORKFLOW, KILL_SIGNAL, PROGRESS_QUERY, STATE_SCHEMA_VERSION, WORK_ORDER_SIGNAL, AgentLoopResult,
        AgentLoopState, KillNotice, AgentLoopStart, order_ref, RunOutcome, RunStatus, ToolCall, ToolRequest, WorkOrder,
    )
    from workflows.review_task import assistant_message, tool_message
    from workflows.loop_plan import LoopPlan, plan_for
    from workflows.names import MODEL_ACTIVITY, RECORD_OUTCOME_ACTIVITY
    from workflows.steps import call_model, call_tool
    from workflows.cancellation import CancelAttribution, attribute
    from workflows.order_end import cancelled_before_start, mark_cancelled, record_outcome, release_capacity, uncancellable
    from workflows.claims import ClaimVerdict
    from workflows.run_memo import MEMO_PATCH, changed_fields, memo_for
    from workflows.order_claim import ADMISSION_PATCH, CLAIM_ORDER_PATCH, REFUSED, claim_order, unrun_outcome
    from workflows.policy_step import POLICY_FIRST_STEP_PATCH, policy_skipped, recheck_policy
    from workflows.lean_steps import lean, lean2, memo_changes_only, patched

SUPERSEDE_PATCH = "supersede-at-step-boundary"
CONTINUE_AS_NEW_PATCH = "continue-as-new-between-orders"
RELEASE_CAPACITY_PATCH = "release-capacity-at-end"
CANCEL_PATCH = "cancel-is-an-outcome"
KILL_SCOPE_PATCH = "kill-notice-covers-its-orders"
CARRIED_STATE_PATCH = "carried-state-only-from-continue-as-new"
TOOL_CALL_CAP_PATCH = "tool-calls-per-step-cap"
FENCED_TOOL_PATCH = "fenced-tool-call-is-superseded"
READ_ARTIFACT_PATCH = "read-artifact-tool"
# The model is offered read_artifact and taught it; before the patch it was an unknown tool.
# A cancel ends the open orders `cancelled` and closes the run CANCELED after an uncancellable cleanup.
MAX_RECENT_OUTCOMES = 20


@workflow.defn(name=AGENT_WORKFLOW)
class AgentLoopWorkflow:
    def __init__(self) -> None:
        self._pending: list[WorkOrder] = []
        self._seen_generations: set[int] = set()
        self._current: WorkOrder | None = None
        self._steps = 0
        self._finished: list[RunOutcome] = []
        self._kill: KillNotice | None = None
        self._outcome: RunOutcome | None = None
        """The current order's outcome as it builds up (what a cancel records)."""
        self._ending = False
        """The current order's outcome is final and being recorded."""
        self._cancel_aware = False
        self._artifact_reads = False
        self._memo = False
        self._memo_at: datetime | None = None
        """Workflow time of the run's last memo upsert (patch ``lean-loop-steps-2``)."""
        self._policy_unchanged = False
        """The current order's claim said the worker's policy is the one it was admitted under."""
        self._seen_orders: set[tuple[int, str]] = set()
        """(generation, receipt id) of every order signalled into this run (patch ``claim-requires-admission``)."""
        self._proven: set[tuple[int, str]] = set()
        """Waiting orders the ledger confirmed as admitted (may supersede the running one)."""

    @workflow.signal(name=WORK_ORDER_SIGNAL)
    def work_order(self, order: WorkOrder) -> None:
        if patched(ADMISSION_PATCH):
            # A re-send is the same generation *and* receipt: a forged order sent first with a
            # genuine generation must not make the genuine one look re-sent (the claim refuses it).
            if (order.generation, order.receipt_id) in self._seen_orders:
                workflow.logger.info("ignoring re-sent work order generation %s", order.generation,
                                     extra={"work_key": order.work_key})
                return
            self._seen_orders.add((order.generation, order.receipt_id))
        elif order.generation in self._seen_generations:
            workflow.logger.info("ignoring re-sent work order generation %s", order.generation,
                                 extra={"work_key": order.work_key})
            return
        self._seen_generations.add(order.generation)
        self._pending.append(order)

    @workflow.signal(name=KILL_SIGNAL)
    def kill(self, notice: KillNotice) -> None:
        """Stop before the next step; every order pending now ends ``killed`` too. Under patch
        ``kill-notice-covers-its-orders`` the notice ends only the orders the run holds when it arrives:
        before, it stayed in force for the rest of the run (and was carried across continue-as-new),
        so an order admitted after the unkill and signalled into this run ended ``killed`` too."""
        if self._kill is None:
            covers = None
            if workflow.patched(KILL_SCOPE_PATCH):
                covers = self._held_refs()
            self._kill = KillNotice(notice.actor, notice.reason, covers)
        elif self._kill.covers is not None:  # a later kill (after an unkill, say) covers what the run holds now
            self._kill = KillNotice(notice.actor, notice.reason, sorted({*self._kill.covers, *self._held_refs()}))

    def _held_refs(self) -> list[str]:
        """The orders the run holds now (current and pending), as a kill notice names them."""
        held = [self._current, *self._pending] if self._current is not None else self._pending
        return [order_ref(o.generation, o.receipt_id) for o in held]

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
        self._cancel_aware = patched(CANCEL_PATCH)
        try:
            return await self._serve(start)
        except (asyncio.CancelledError, CancelledError, ActivityError):
            if not self._cancel_requested():
                raise
            who = attribute(workflow.cancellation_reason())
            await uncancellable(self._wind_down(start.work_key, who))
            raise CancelledError(who.outcome_reason) from None

    async def _serve(self, start: AgentLoopStart) -> AgentLoopResult:
        if start.state is not None:
            self._restore(start.state)
        await workflow.wait_condition(lambda: bool(self._pending), timeout=timedelta(minutes=10))
        orders_this_run = 0
        while True:
            while self._pending:
                order = self._pending.pop(0)
                self._current = order
                await self._run_order(order)
                orders_this_run += 1
                if self._pending and self._should_continue_as_new(start, orders_this_run):
                    await workflow.wait_condition(workflow.all_handlers_finished)
                    workflow.continue_as_new(AgentLoopStart(start.work_key, start.tenant, self._snapshot(),
                                                            start.max_orders_per_run))
            if self._finished and patched(RELEASE_CAPACITY_PATCH):
                await release_capacity(start.work_key, self._newest_generation(), self._cancel_aware)
            await workflow.wait_condition(workflow.all_handlers_finished)
            if not self._pending:  # an order signalled during the release runs on the slots it reused
                break
        self._check_cancel()  # a cancel that arrived while the last activity completed anyway
        return AgentLoopResult(work_key=start.work_key, orders=list(self._finished))

    def _newest_generation(self) -> int:
        return max(o.generation for o in self._finished)

    def _cancel_requested(self) -> bool:
        return self._cancel_aware and workflow.cancellation_reason() is not None

    def _check_cancel(self) -> None:
        """At a step boundary: a cancel whose activity finished before it saw the cancel stops here."""
        if self._cancel_requested():
            raise asyncio.CancelledError()

    async def _wind_down(self, work_key: str, who: CancelAttribution) -> None:
        """Record every open order ``cancelled`` (the current one with its spend so far, pending ones
        with none; one already finished keeps its outcome), then give the capacity back. Orders
        signalled during the cleanup are cancelled too: the run is closing (a known gap for a version
        admitted in those seconds: docs/runbook.md, "Cancelling a run")."""
        run_id = workflow.info().run_id
        if self._current is not None:
            outcome = self._outcome if self._outcome is not None else cancelled_before_start(
                self._current, run_id, who)
            await self._close_order(self._current, outcome if self._ending else mark_cancelled(outcome, who))
        while True:
            while self._pending:
                order = self._pending.pop(0)
                await self._close_order(order, cancelled_before_start(order, run_id, who))
            if self._finished:
                await release_capacity(work_key, self._newest_generation(), True)
            await workflow.wait_condition(workflow.all_handlers_finished)
            if not self._pending:
                return

    @staticmethod
    def _should_continue_as_new(start: AgentLoopStart, orders_this_run: int) -> bool:
        """Between orders only (an order's own history is bounded by its step cap)."""
        due = orders_this_run >= start.max_orders_per_run or workflow.info().is_continue_as_new_suggested()
        return due and patched(CONTINUE_AS_NEW_PATCH)

    def _snapshot(self) -> AgentLoopState:
        return AgentLoopState(STATE_SCHEMA_VERSION, pending=list(self._pending),
                              seen_generations=sorted(self._seen_generations),
                              recent=self._finished[-MAX_RECENT_OUTCOMES:], kill=self._kill)

    def _restore(self, carried: AgentLoopState) -> None:
        try:
            state = upgrade_state(carried)
        except StateSchemaError as exc:
            raise ApplicationError(str(exc), type=FailureType.STATE_SCHEMA_UNSUPPORTED, non_retryable=True) from None
        self._pending = list(state.pending) + self._pending
        self._seen_generations |= set(state.seen_generations)
        recent, kill = list(state.recent), state.kill
        if (recent or kill) and workflow.info().continued_run_id is None and workflow.patched(CARRIED_STATE_PATCH):
            # Only a continue-as-new hands a run its outcomes and kill notice; anyone who can start
            # a workflow can write a state. Believed, a forged newer outcome made every genuine order
            # look superseded, and a forged notice had them end "killed by" whoever it named.
            # Carried orders stay: each is claimed against the ledger like any other.
            workflow.logger.warning("a start that is not a continue-as-new carried %d outcome(s)%s; not believed",
                                    len(recent), " and a kill notice" if kill else "")
            recent, kill = [], None
        self._finished = recent
        mine = self._kill
        if mine is not None and mine.covers is not None:  # a kill signalled in this run's first activation,
            # before this restore: the carried orders were already the run's, and a carried notice still holds
            theirs = [order_ref(o.generation, o.receipt_id) for o in state.pending] + (
                (kill.covers or []) if kill is not None else [])
            self._kill = KillNotice(mine.actor, mine.reason, sorted({*mine.covers, *theirs}))
        else:
            self._kill = mine or kill

    async def _run_order(self, order: WorkOrder) -> None:
        self._policy_unchanged = False
        if patched(CLAIM_ORDER_PATCH) and not await self._claim(order):
            return
        if patched(POLICY_FIRST_STEP_PATCH) and not self._policy_unchanged:  # live policy (workflows/policy_step.py)
            check = await recheck_policy(order, self._cancel_aware)
            if not check.permitted:
                return await self._close_order(order, policy_skipped(order, check))
        self._set_status(order, "running")
        self._memo = patched(MEMO_PATCH)
        self._upsert_memo(order, 0.0, "running")
        self._artifact_reads = patched(READ_ARTIFACT_PATCH)
        plan = plan_for(order, self._artifact_reads)  # the order's task (workflows/loop_plan.py)
        outcome = self._outcome = RunOutcome(
            order.work_key, order.input_version, order.generation, RunStatus.DONE, "completed",
            run_id=workflow.info().run_id, receipt_id=order.receipt_id, tenant=order.tenant, source=order.source)
        if plan is None:  # a work key naming no registered task: nothing to offer the model
            outcome.status, outcome.reason = RunStatus.FAILED, "unknown-task"
            return await self._close_order(order, outcome)
        messages = plan.messages
        self._ending = False
        self._steps = 0
        started = workflow.now()
        while True:
            self._check_cancel()
            if self._killed(outcome) or await self._superseded(order, outcome) or self._retry_capped(order, outcome):
                break
            elapsed = (workflow.now() - started).total_seconds()
            stop = exhausted(order.budget, outcome.steps, outcome.usage, outcome.cost_usd, elapsed)
            if stop is not None:
                outcome.status, outcome.reason = RunStatus.BUDGET_EXHAUSTED, stop
                break
            try:
                response = await call_model(order, messages, outcome.steps + 1, self._cancel_aware, plan.tools)
            except ActivityError as err:
                self._check_cancel()
                kind = failure_type(err)
                count_failure(err, order.runtime.model_max_attempts, outcome)
                ends: dict[str, RunStatus] = {FailureType.KILLED: RunStatus.KILLED,
                                              FailureType.DAY_BUDGET_EXCEEDED: RunStatus.BUDGET_EXHAUSTED}
                outcome.status = ends.get(kind, RunStatus.FAILED)
                outcome.reason = f"model-error: {kind}"
                break
            outcome.retries += response.attempt - 1
            outcome.steps += 1
            self._steps = outcome.steps
            outcome.usage = outcome.usage.plus(response.usage)
            outcome.cost_usd = cost_usd(outcome.usage, order.price)
            if response.tool_calls or not lean():  # else the order's end upserts it (lean-loop-steps)
                self._upsert_cost(order, outcome.cost_usd)
            messages.append(assistant_message(response))
            if not response.tool_calls:
                break
            failed = await self._run_tools(order, plan, response.tool_calls, messages, outcome)
            if failed is not None:
                outcome.status, outcome.reason = RunStatus.FAILED, failed
                break
            if outcome.status in (RunStatus.SUPERSEDED, RunStatus.KILLED):
                break
        await self._close_order(order, outcome)

    async def _close_order(self, order: WorkOrder, outcome: RunOutcome) -> None:
        """Record the order's outcome in the ledger; it is finished once that is done."""
        self._outcome, self._ending = outcome, True
        await record_outcome(outcome, self._cancel_aware)
        self._finished.append(outcome)
        self._current = self._outcome = None
        self._set_status(order, outcome.status)
        self._upsert_memo(order, outcome.cost_usd, str(outcome.status))
        workflow.logger.info("work order %s@%s ended: %s (%s), %d steps, %d tokens, $%.5f",
                             order.work_key, order.input_version, outcome.status, outcome.reason,
                             outcome.steps, outcome.usage.total, outcome.cost_usd,
                             extra={"work_key": order.work_key})

    async def _claim(self, order: WorkOrder) -> bool:
        """Generations only move forward: True lets the order run; otherwise it ends here without a
        model call — ``superseded`` (recorded) or ``skipped`` (its admission ended before; nothing
        recorded). A cancel already requested, or one arriving during the claim, propagates (the order
        is then recorded ``cancelled``, never claimed)."""
        self._check_cancel()
        seen: list[WorkOrder | RunOutcome] = [*self._pending, *self._finished]
        if patched(ADMISSION_PATCH):  # only orders proven admitted may make this one look stale
            seen = [*(o for o in self._pending if (o.generation, o.receipt_id) in self._proven),
                    *(o for o in self._finished if o.status != REFUSED)]
        claim = await claim_order(order, seen, self._cancel_aware, ask_policy=lean2())
        if claim.verdict == ClaimVerdict.RUN:
            self._policy_unchanged = claim.policy_unchanged
            return True
        outcome = unrun_outcome(order, claim)
        workflow.logger.info("work order %s@%s gen %s not run: %s", order.work_key, order.input_version,
                             order.generation, claim.reason, extra={"work_key": order.work_key})
        if claim.verdict == ClaimVerdict.SUPERSEDED:
            await self._close_order(order, outcome)
        else:
            self._finished.append(outcome)
            self._current = None
            self._set_status(order, outcome.status)
        return False

    async def _run_tools(self, order: WorkOrder, plan: LoopPlan, calls: list[ToolCall],
                         messages: list[dict[str, Any]], outcome: RunOutcome) -> str | None:
        """Run the step's tool calls in order; returns a failure reason or None. Past
        ``runtime.max_tool_calls_per_step`` (patch ``tool-calls-per-step-cap``) the rest are answered
        ``not run`` without an activity: the model chooses how many it asks for, and every call is
        history; the step cap alone did not bound one order's history."""
        rt = order.runtime
        cap = rt.max_tool_calls_per_step
        if len(calls) > cap and workflow.patched(TOOL_CALL_CAP_PATCH):
            workflow.logger.warning("%s@%s: the model asked for %d tool calls in one step; running the first %d",
                                    order.work_key, order.input_version, len(calls), cap,
                                    extra={"work_key": order.work_key})
            failed = await self._run_tools(order, plan, calls[:cap], messages, outcome)
            if failed is None and outcome.status == RunStatus.DONE:
                messages.extend(tool_message(call.id, f"error: not run: at most {cap} tool calls per step")
                                for call in calls[cap:])
            return failed
        for call in calls:
            self._check_cancel()
            if self._killed(outcome) or await self._superseded(order, outcome):
                return None
            activity_name = plan.activities.get(call.name)  # read_artifact only after its patch
            if activity_name is None:
                messages.append(tool_message(call.id, f"error: unknown tool {call.name!r}"))
                continue
            request = ToolRequest(order.work_key, order.tenant, order.owner, order.repo, order.number,
                                  order.input_version, order.generation, call.id, call.arguments,
                                  order.effect_discriminator)
            try:
                result = await call_tool(activity_name, request, rt, self._cancel_aware)
            except ActivityError as err:
                self._check_cancel()
                count_failure(err, rt.tool_max_attempts, outcome)
                if failure_type(err) == FailureType.KILLED:
                    outcome.status, outcome.reason = RunStatus.KILLED, f"tool-error: {call.name}: Killed"
                    return None
                if failure_type(err) == FailureType.FENCED_OUT and workflow.patched(FENCED_TOOL_PATCH):
                    # A newer admission of the work owns it now (the gateway's fence): superseded, as at
                    # a step boundary, not a failure that pages someone.
                    outcome.status = RunStatus.SUPERSEDED
                    outcome.reason = f"superseded: {call.name} fenced out by a newer admission of the work"
                    return None
                return f"tool-error: {call.name}: {failure_type(err)}"
            outcome.retries += result.attempt - 1
            if result.operation_key:
                outcome.operation_keys.append(result.operation_key)
            if result.external_id:
                outcome.external_ids.append(result.external_id)
            messages.append(tool_message(call.id, result.content))
            if lean2():  # a step's cost held back by the interval, once due (nothing is sent when current)
                self._upsert_cost(order, outcome.cost_usd)
        return None

    @staticmethod
    def _retry_capped(order: WorkOrder, outcome: RunOutcome) -> bool:
        cap = order.runtime.max_task_retries
        if outcome.retries <= cap:
            return False
        outcome.status, outcome.reason = RunStatus.FAILED, f"retry-cap: {outcome.retries} retries over {cap} for the task"
        return True

    def _killed(self, outcome: RunOutcome) -> bool:
        if self._kill is None:
            return False
        if self._kill.covers is not None and order_ref(outcome.generation, outcome.receipt_id) not in self._kill.covers:
            return False
        outcome.status, outcome.reason = RunStatus.KILLED, f"killed by {self._kill.actor}: {self._kill.reason}"
        return True

    async def _superseded(self, order: WorkOrder, outcome: RunOutcome) -> bool:
        """At a step boundary: is a newer generation waiting? Marks ``outcome`` if so. Under patch
        ``claim-requires-admission`` only an order the ledger admitted may supersede: a forged one
        with a higher generation would otherwise end a genuine run."""
        newer = [o for o in self._pending if o.generation > order.generation]
        if not newer or not patched(SUPERSEDE_PATCH):
            return False
        if patched(ADMISSION_PATCH):
            newer = [o for o in newer if await self._admitted(o)]
            if not newer:
                return False
        newest = max(newer, key=lambda o: o.generation)
        outcome.status = RunStatus.SUPERSEDED
        outcome.reason = f"superseded by {newest.input_version} (generation {newest.generation})"
        return True

    async def _admitted(self, pending: WorkOrder) -> bool:
        """Is this waiting order one intake admitted? A refused one leaves the queue, ``refused``."""
        if (pending.generation, pending.receipt_id) in self._proven:
            return True
        claim = await claim_order(pending, [], self._cancel_aware)
        if claim.verdict != ClaimVerdict.REFUSED:
            self._proven.add((pending.generation, pending.receipt_id))
            return True
        self._pending.remove(pending)
        self._finished.append(unrun_outcome(pending, claim))
        workflow.logger.info("waiting work order %s@%s gen %s refused: %s", pending.work_key, pending.input_version,
                             pending.generation, claim.reason, extra={"work_key": pending.work_key})
        return False

    def _upsert_cost(self, order: WorkOrder, cost: float) -> None:
        """Upsert the cost so far (status ``running``). After a model step, always, unless ``lean-loop-steps-2``
        is in force: then once ``memo_cost_interval_seconds`` of workflow time have passed since the last memo
        upsert. Under that patch it is asked again after every tool call, so a cost held back is sent as
        soon as it is due: the memo lags the run by at most the interval plus the call in flight."""
        if self._memo_at is not None and lean2() and \
                (workflow.now() - self._memo_at).total_seconds() < order.runtime.memo_cost_interval_seconds:
            return
        self._upsert_memo(order, cost, "running")

    def _upsert_memo(self, order: WorkOrder, cost: float, status: str) -> None:
        """The UI's memo: the current order, its status and cost so far (patch ``memo-cost-so-far``)."""
        if not self._memo:
            return
        memo = memo_for(order, cost, status)
        if memo_changes_only():  # the changed fields only: each is a payload (workflows/lean_steps.py)
            memo = changed_fields(workflow.memo(), memo)
            if not memo:
                return
        self._memo_at = workflow.now()
        workflow.upsert_memo(memo)

    def _set_status(self, order: WorkOrder, status: str) -> None:
        if order.runtime.search_attributes:
            workflow.upsert_search_attributes([sa.STATUS.value_set(status),
                                               sa.INPUT_VERSION.value_set(order.input_version)])


__all__ = ["AgentLoopWorkflow", "CANCEL_PATCH", "MODEL_ACTIVITY", "RECORD_OUTCOME_ACTIVITY"]
