"""How workflows name an activity failure (the ``ApplicationError.type`` an activity raised)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from temporalio.exceptions import ActivityError, ApplicationError, RetryState

if TYPE_CHECKING:
    from workflows.contracts import RunOutcome


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
