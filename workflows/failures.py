"""How workflows name an activity failure (the ``ApplicationError.type`` an activity raised)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, RetryState

if TYPE_CHECKING:
    from workflows.contracts import RunOutcome


HONOUR_CANCEL_PATCH = "goal-scan-honour-cancel"
"""A cancel of a goal or scan run ends it (before: a cancel reaching the activity in flight was taken
for that activity's failure, and the run went on — a goal polled again and admitted work)."""


def cancel_requested() -> bool:
    """Inside ``except ActivityError``: was the workflow itself cancelled (the activity's failure is
    that cancel), so the caller must re-raise rather than carry on? Asks the patch only then: a run
    never cancelled records no marker, and a cancelled run recorded before the patch replays as it ran."""
    return workflow.cancellation_reason() is not None and workflow.patched(HONOUR_CANCEL_PATCH)


def failure_type(err: ActivityError) -> str:
    cause = err.cause
    if isinstance(cause, ApplicationError) and cause.type:
        return cause.type
    return type(cause).__name__ if cause else "ActivityError"


def count_failure(err: ActivityError, max_attempts: int, outcome: "RunOutcome") -> None:
    """Add a failed step's retries to the order: one that used up its retry policy spent
    ``max_attempts - 1``; keep its error as the order's last one."""
    if err.retry_state == RetryState.MAXIMUM_ATTEMPTS_REACHED:
        outcome.retries += max_attempts - 1
    outcome.last_error = str(err.cause or err)[:500]
