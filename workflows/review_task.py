"""The pull-request review task: the prompt and the tools offered to the model.

Pure data. Tool names map to activity names in :data:`TOOL_ACTIVITIES`; a tool the
model invents is answered with an error message, never executed.

Two versions, chosen by the workflow (patch ``read-artifact-tool``): runs recorded before it keep
:data:`TOOLS` and :data:`SYSTEM_PROMPT` (and ``read_artifact`` is an unknown tool to them); newer
runs offer :data:`TOOLS_WITH_READ` with :data:`SYSTEM_PROMPT_WITH_READ`, which teaches the model to
read a large diff stored as an artifact handle in parts.
"""

from __future__ import annotations

from typing import Any

from workflows.contracts import ModelResponse, WorkOrder
from workflows.names import GET_DIFF_ACTIVITY, POST_COMMENT_ACTIVITY, READ_ARTIFACT_ACTIVITY

GET_DIFF = "get_pull_request_diff"
POST_COMMENT = "post_review_comment"
READ_ARTIFACT = "read_artifact"

TOOL_ACTIVITIES: dict[str, str] = {
    GET_DIFF: GET_DIFF_ACTIVITY,
    POST_COMMENT: POST_COMMENT_ACTIVITY,
    READ_ARTIFACT: READ_ARTIFACT_ACTIVITY,
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

READ_ARTIFACT_TOOL: dict[str, Any] = {"type": "function", "function": {
    "name": READ_ARTIFACT,
    "description": ("Read part of a stored artifact (a large diff) by its handle: `length` characters from "
                    "`offset`. Only handles given to you in this review can be read; the result says the next "
                    "offset, or that the end was reached."),
    "parameters": {"type": "object", "properties": {
        "handle": {"type": "string", "description": "artifact:sha256:<hex>, exactly as given"},
        "offset": {"type": "integer", "minimum": 0, "description": "first character to read"},
        "length": {"type": "integer", "minimum": 1,
                   "description": "characters to read (at most the limit the diff message states)"}},
        "required": ["handle", "offset"], "additionalProperties": False}}}

TOOLS_WITH_READ: list[dict[str, Any]] = [*TOOLS, READ_ARTIFACT_TOOL]

SYSTEM_PROMPT_WITH_READ = (
    "You are a pull-request reviewer. Read the diff with get_pull_request_diff. A large diff comes back as "
    "a preview of its start plus a handle (artifact:sha256:...); read the rest with read_artifact(handle, "
    "offset, length), continuing from the next offset each result gives, until you have read what the review "
    "needs. Then post exactly one concise review with post_review_comment, then answer with a one-line summary."
)


def initial_messages(order: WorkOrder, artifact_reads: bool = False) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": SYSTEM_PROMPT_WITH_READ if artifact_reads else SYSTEM_PROMPT},
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
