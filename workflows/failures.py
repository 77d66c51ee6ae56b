"""How workflows name an activity failure (the ``ApplicationError.type`` an activity raised)."""

from __future__ import annotations

from temporalio.exceptions import ActivityError, ApplicationError


def failure_type(err: ActivityError) -> str:
    cause = err.cause
    if isinstance(cause, ApplicationError) and cause.type:
        return cause.type
    return type(cause).__name__ if cause else "ActivityError"
