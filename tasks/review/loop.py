"""The pull-request review's prompt and tools (moved here from ``workflows/review_task.py``, which
re-exports them: replay-sensitive imports keep working).

Two versions, chosen by the workflow (patch ``read-artifact-tool``): runs recorded before it keep
:data:`TOOLS` and :data:`SYSTEM_PROMPT` (and ``read_artifact`` is an unknown tool to them); newer
runs offer :data:`TOOLS_WITH_READ` with :data:`SYSTEM_PROMPT_WITH_READ`. Pure data. The activity
names are the registered ones (``workflows/names.py``; never renamed).
"""

from __future__ import annotations

from typing import Any

GET_DIFF = "get_pull_request_diff"
POST_COMMENT = "post_review_comment"
READ_ARTIFACT = "read_artifact"

GET_DIFF_ACTIVITY = "sluicegate.tool.get_pull_request_diff"
POST_COMMENT_ACTIVITY = "sluicegate.tool.post_review_comment"
READ_ARTIFACT_ACTIVITY = "sluicegate.tool.read_artifact"

TOOL_ACTIVITIES: dict[str, str] = {
    GET_DIFF: GET_DIFF_ACTIVITY,
    POST_COMMENT: POST_COMMENT_ACTIVITY,
    READ_ARTIFACT: READ_ARTIFACT_ACTIVITY,
}

GET_DIFF_TOOL: dict[str, Any] = {"type": "function", "function": {
    "name": GET_DIFF,
    "description": "Fetch the unified diff of the pull request under review.",
    "parameters": {"type": "object", "properties": {}, "additionalProperties": False}}}

POST_COMMENT_TOOL: dict[str, Any] = {"type": "function", "function": {
    "name": POST_COMMENT,
    "description": "Post the review as one comment on the pull request. Call once.",
    "parameters": {"type": "object", "properties": {"body": {"type": "string"}},
                   "required": ["body"], "additionalProperties": False}}}

TOOLS: list[dict[str, Any]] = [GET_DIFF_TOOL, POST_COMMENT_TOOL]

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


def first_message(owner: str, repo: str, number: int, version: str) -> str:
    return f"Review pull request {owner}/{repo}#{number} at head commit {version}."
