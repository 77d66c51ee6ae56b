"""GoalWorkflow: watch one observation of a pull request, bounded, then run intake or say why not.

Loop: observe (activity ``sluicegate.goal.observe`` reads the forge) → the condition holds?
run intake (``sluicegate.intake.submit``, trigger kind ``goal``, input version = the head
sha observed) and end. Otherwise stop when ``max_polls`` observations were made or the
deadline (``workflow.now()`` at start + ``deadline_seconds``) is reached; else sleep
``min(poll interval, time left)`` — so the last observation happens at the deadline — and
observe again. When a bound ends the watch, a ``no-work`` receipt with reason
``goal-bound-reached`` records it. Never unbounded: both bounds are required and checked
before the first poll. An observation that fails after its retries counts as a poll whose
condition did not hold; a cancel of the goal ends it (patch ``goal-scan-honour-cancel``), even
when it reaches an observation in flight.

Deterministic: timers via ``workflow.sleep``, the clock via ``workflow.now()``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from intake.decision import IntakeDecision
    from workflows.failures import cancel_requested
    from workflows.scan import delivery_id_for
    from workflows.kinds import FailureType
    from workflows.goal_contracts import GOAL_CONDITIONS, GoalRequest, GoalResult, Observation, ObserveRequest
    from workflows.names import (
        GOAL_BOUND_ACTIVITY, GOAL_OBSERVE_ACTIVITY, GOAL_PROGRESS_QUERY, GOAL_WORKFLOW, INTAKE_SUBMIT_ACTIVITY,
    )
    from workflows.scan_contracts import GOAL_BOUND_REACHED, IntakeRequest, ReceiptRef, ReceiptRequest
    from workflows.typed_activity import execute_typed


@workflow.defn(name=GOAL_WORKFLOW)
class GoalWorkflow:
    def __init__(self) -> None:
        self._polls = 0
        self._last = ""

    @workflow.query(name=GOAL_PROGRESS_QUERY)
    def progress(self) -> dict[str, Any]:
        return {"polls": self._polls, "last_observation": self._last}

    @workflow.run
    async def run(self, req: GoalRequest) -> GoalResult:
        _validate(req)
        deadline = workflow.now() + timedelta(seconds=req.deadline_seconds)
        interval = timedelta(seconds=req.poll_seconds)
        condition = req.condition.describe()
        stopped = None
        while True:
            obs = await self._observe(req)
            self._polls += 1
            self._last = obs.detail
            if obs.killed:  # checked at every wake: a sleeping goal dies when it wakes
                stopped = "killed"
                break
            if obs.holds:
                decision = await self._intake(req, obs)
                workflow.logger.info("goal %s on %s met after %d polls: %s (%s)", condition, req.target_id,
                                     self._polls, decision.outcome, decision.reason)
                return GoalResult(req.target_id, condition, met=True, polls=self._polls, decision=decision,
                                  receipt_id=decision.receipt_id, last_observation=obs.detail)
            left = deadline - workflow.now()
            if self._polls >= req.max_polls or left <= timedelta(0):
                break
            await workflow.sleep(min(interval, left))
        bound = stopped or ("max-polls" if self._polls >= req.max_polls else "deadline")
        ref = await workflow.execute_activity(
            GOAL_BOUND_ACTIVITY,
            ReceiptRequest(trigger_kind="goal", source=req.source, delivery_id=f"{workflow.info().run_id}:bound",
                           event_type=f"goal.{req.condition.kind}", tenant=req.tenant, reason=GOAL_BOUND_REACHED,
                           subject=req.target_id, target_id=req.target_id,
                           message=f"{condition} not met on {req.target_id} after {self._polls} polls "
                                   f"({bound} reached: max_polls={req.max_polls}, "
                                   f"deadline={req.deadline_seconds:g}s); last observation: {self._last}"),
            result_type=ReceiptRef, start_to_close_timeout=timedelta(seconds=req.activity_timeout_seconds),
            retry_policy=RetryPolicy(maximum_attempts=10, maximum_interval=timedelta(seconds=30)))
        workflow.logger.info("goal %s on %s ended unmet: %s after %d polls", condition, req.target_id, bound,
                             self._polls)
        return GoalResult(req.target_id, condition, met=False, polls=self._polls, bound=bound,
                          receipt_id=ref.receipt_id, last_observation=self._last)

    async def _observe(self, req: GoalRequest) -> Observation:
        try:
            return await execute_typed(
                GOAL_OBSERVE_ACTIVITY, ObserveRequest(req.owner, req.repo, req.number, req.condition, req.tenant),
                result_type=Observation, start_to_close_timeout=timedelta(seconds=req.activity_timeout_seconds),
                retry_policy=RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=10),
                                         maximum_attempts=req.observe_max_attempts))
        except ActivityError as err:
            if cancel_requested():  # the goal was cancelled: it ends, it does not poll again
                raise
            return Observation(exists=False, detail=f"observation failed: {err.cause or err}")

    async def _intake(self, req: GoalRequest, obs: Observation) -> IntakeDecision:
        return await execute_typed(
            INTAKE_SUBMIT_ACTIVITY,
            IntakeRequest(trigger_kind="goal", source=req.source,
                          delivery_id=delivery_id_for(workflow.info().run_id, req.target_id, obs.head_sha),
                          event_type=f"goal.{req.condition.kind}", tenant=req.tenant, owner=req.owner,
                          repo=req.repo, number=req.number, input_version=obs.head_sha, draft=obs.draft,
                          emitted_at=workflow.now().isoformat()),
            result_type=IntakeDecision, start_to_close_timeout=timedelta(seconds=req.activity_timeout_seconds),
            retry_policy=RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=30),
                                     maximum_attempts=10))


def _validate(req: GoalRequest) -> None:
    problems = []
    if req.condition.kind not in GOAL_CONDITIONS:
        problems.append(f"unknown condition {req.condition.kind!r} (one of {', '.join(GOAL_CONDITIONS)})")
    if req.condition.kind in ("head", "comment") and not req.condition.value:
        problems.append(f"condition {req.condition.kind!r} needs a value")
    if req.max_polls < 1:
        problems.append("max_polls must be at least 1")
    if not req.poll_seconds > 0:
        problems.append("poll_seconds must be positive")
    if not req.deadline_seconds > 0:
        problems.append("deadline_seconds must be positive")
    if problems:
        raise ApplicationError("invalid goal: " + "; ".join(problems), type=FailureType.INVALID_GOAL, non_retryable=True)


__all__ = ["GoalWorkflow"]
