"""The pull-request review task as the agent loop runs it: prompt, tools, messages.

The prompts and tools live in the review task's package (``tasks/review/loop.py``) and are
re-exported here. Pure data. Tool names map to activity names in :data:`TOOL_ACTIVITIES`; a tool the
model invents is answered with an error message, never executed.

Two versions, chosen by the workflow (patch ``read-artifact-tool``): runs recorded before it keep
:data:`TOOLS` and :data:`SYSTEM_PROMPT` (and ``read_artifact`` is an unknown tool to them); newer
runs offer :data:`TOOLS_WITH_READ` with :data:`SYSTEM_PROMPT_WITH_READ`, which teaches the model to
read a large diff stored as an artifact handle in parts.
"""

from __future__ import annotations

from typing import Any

from workflows.contracts import ModelResponse, WorkOrder

# Moved to the review task's package; re-exported under their old names (replay-sensitive imports).
from tasks.review.loop import (  # noqa: F401
    GET_DIFF, POST_COMMENT, READ_ARTIFACT, READ_ARTIFACT_TOOL, SYSTEM_PROMPT, SYSTEM_PROMPT_WITH_READ,
    TOOL_ACTIVITIES, TOOLS, TOOLS_WITH_READ, first_message,
)

__all__ = ["GET_DIFF", "POST_COMMENT", "READ_ARTIFACT", "READ_ARTIFACT_TOOL", "SYSTEM_PROMPT", "SYSTEM_PROMPT_WITH_READ",
           "TOOL_ACTIVITIES", "TOOLS", "TOOLS_WITH_READ", "assistant_message", "initial_messages", "tool_message"]


def initial_messages(order: WorkOrder, artifact_reads: bool = False) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": SYSTEM_PROMPT_WITH_READ if artifact_reads else SYSTEM_PROMPT},
        {"role": "user", "content": first_message(order.owner, order.repo, order.number, order.input_version)},
    ]


def assistant_message(response: ModelResponse) -> dict[str, Any]:
    """The model's answer as the next message of the conversation."""
    message: dict[str, Any] = {"role": "assistant", "content": response.content}
    if response.tool_calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in response.tool_calls]
    return message


def tool_message(call_id: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}
