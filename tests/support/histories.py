"""Reading a workflow history: how an activity was retried (attempt, last failure, asked delay)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from temporalio.client import WorkflowHistory


@dataclass(frozen=True)
class Retried:
    attempt: int
    """The attempt that started last (1: never retried)."""
    failure_type: str | None
    """``ApplicationError.type`` of the failure before it."""
    message: str
    next_retry_delay: timedelta | None
    """The delay the failed attempt asked for (``next_retry_delay``)."""


def last_attempts(history: WorkflowHistory, activity_type: str) -> list[Retried]:
    """For each scheduling of ``activity_type``, the attempt that ran last and the failure before it."""
    scheduled = {e.event_id for e in history.events
                 if e.HasField("activity_task_scheduled_event_attributes")
                 and e.activity_task_scheduled_event_attributes.activity_type.name == activity_type}
    found = []
    for event in history.events:
        if not event.HasField("activity_task_started_event_attributes"):
            continue
        started = event.activity_task_started_event_attributes
        if started.scheduled_event_id not in scheduled:
            continue
        failure = started.last_failure
        info = failure.application_failure_info if failure.HasField("application_failure_info") else None
        delay = info.next_retry_delay.ToTimedelta() if info is not None and info.HasField("next_retry_delay") else None
        found.append(Retried(started.attempt, info.type if info is not None else None, failure.message, delay))
    return found
