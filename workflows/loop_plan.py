"""Which prompt and tools an order's loop uses: the registered task its work key names.

Workflow code, pure: the task catalogue (``tasks.registry``) was discovered at import time from the
code on disk; here it is only looked up by the order's work-key suffix. No configuration, no
environment. A ``review`` order takes exactly the path it took before the registry (the patched
``read-artifact-tool`` choice in ``workflows/review_task.py``), so recorded histories replay
unchanged; another task's order takes its :class:`tasks.spec.LoopSpec`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from intake.identity import REVIEW_TASK
from tasks import registry
from workflows.contracts import WorkOrder
from tasks.review.loop import READ_ARTIFACT, TOOL_ACTIVITIES, TOOLS, TOOLS_WITH_READ
from workflows.review_task import initial_messages


@dataclass(frozen=True)
class LoopPlan:
    task: str
    tools: list[dict[str, Any]]
    messages: list[dict[str, Any]]
    activities: dict[str, str]
    """Model-facing tool name -> activity name; a name not here is answered as an unknown tool."""


def plan_for(order: WorkOrder, artifact_reads: bool) -> LoopPlan | None:
    """The loop plan of ``order``'s task; ``None`` when its work key names no registered task."""
    task = registry.task_of(order.work_key)
    if task == REVIEW_TASK:
        activities = dict(TOOL_ACTIVITIES)
        if not artifact_reads:  # not offered before the patch: answered as unknown, as it was then
            activities.pop(READ_ARTIFACT)
        return LoopPlan(task, TOOLS_WITH_READ if artifact_reads else TOOLS,
                        initial_messages(order, artifact_reads), activities)
    spec = registry.for_work_key(order.work_key)
    if spec is None:
        return None
    return LoopPlan(task, spec.loop.tool_definitions(),
                    spec.loop.messages(order.owner, order.repo, order.number, order.input_version),
                    spec.loop.tool_activities())
