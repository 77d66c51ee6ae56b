"""What the loop bench counts in Temporal history: events per model step (measurement 1), and the
model activities completed and retried (measurement 2)."""

from __future__ import annotations

from typing import Any

from temporalio.api.enums.v1 import EventType

from workflows.agent_loop import MODEL_ACTIVITY

COUNTED_EVENTS = {
    "activities": EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
    "workflow_tasks": EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
    "search_attribute_upserts": EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
    "memo_upserts": EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED,
    "timers": EventType.EVENT_TYPE_TIMER_STARTED,
    "signals": EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
}
MARKERS = {"core_patch": "patch_markers", "core_local_activity": "local_activities"}
"""Markers by name: a ``workflow.patched`` marker, a local activity's result."""


async def events_per_step(handles: list, steps_per_order: int) -> dict[str, float]:
    """History events per model step over these finished workflows, by kind, and all events."""
    counts = dict.fromkeys([*COUNTED_EVENTS, *MARKERS.values(), "all history events"], 0)
    for handle in handles:
        for e in (await handle.fetch_history()).events:
            counts["all history events"] += 1
            for name, kind in COUNTED_EVENTS.items():
                counts[name] += e.event_type == kind
            if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED:
                name = MARKERS.get(e.marker_recorded_event_attributes.marker_name)
                if name:
                    counts[name] += 1
    steps = len(handles) * steps_per_order
    return {k: v / steps for k, v in counts.items()} if steps else counts


async def model_activities(client: Any, versions: list) -> tuple[int, int]:
    """(model activities completed, sum of their attempt - 1) over each run's Temporal history."""
    completed = retries = 0
    scheduled: dict[int, str] = {}
    for v in versions:
        history = await client.get_workflow_handle(v.workflow_id, run_id=v.run_id).fetch_history()
        scheduled.clear()
        for e in history.events:
            if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                scheduled[e.event_id] = e.activity_task_scheduled_event_attributes.activity_type.name
            elif e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
                a = e.activity_task_started_event_attributes
                if scheduled.get(a.scheduled_event_id) == MODEL_ACTIVITY:
                    retries += a.attempt - 1
            elif e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
                a = e.activity_task_completed_event_attributes
                if scheduled.get(a.scheduled_event_id) == MODEL_ACTIVITY:
                    completed += 1
    return completed, retries
