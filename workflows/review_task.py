"""The pull-request review task: the prompt and the tools offered to the model.

Pure data. Tool names map to activity names in :data:`TOOL_ACTIVITIES`; a tool the
model invents is answered with an error message, never executed.
"""

from __future__ import annotations

from typing import Any

from workflows.contracts import ModelResponse, WorkOrder

GET_DIFF = "get_pull_request_diff"
POST_COMMENT = "post_review_comment"

TOOL_ACTIVITIES: dict[str, str] = {
    GET_DIFF: "sluicegate.tool.get_pull_request_diff",
    POST_COMMENT: "sluicegate.tool.post_review_comment",
}

TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {
        "name": GET_DIFF,
        "description": "Fetch the unified diff of the pull request under review.",
        "parameters": {"type": "object", "properties": {}, "additionalProperties": False}}},
    {"type": "function", "function": {
        "name": POST_COMMENT,
        "description": "Post the review as one comment on the pull request. Call once.",
        "parameters": {"type": "object", "properties": {"body": {"type": "string"}},
                       "required": ["body"], "additionalProperties": False}}},
]

SYSTEM_PROMPT = (
    "You are a pull-request reviewer. Read the diff with get_pull_request_diff, then post exactly one "
    "concise review with post_review_comment, then answer with a one-line summary."
)


def initial_messages(order: WorkOrder) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": (
            f"Review pull request {order.owner}/{order.repo}#{order.number} at head commit "
            f"{order.input_version}.")},
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
