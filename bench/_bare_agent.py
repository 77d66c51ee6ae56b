"""The bare *agent* baseline of ``bench/loop_bench.py``: an agent loop on plain Temporal.

What an agent does anyway, with nothing of Sluicegate's runtime: the workflow keeps the
conversation and runs the same activity shape as one ``AgentLoop`` review (model, tool, model,
tool, model; same timeouts and retry caps); the model activity sends the conversation through the
real ``openai`` client to the model simulator, the tool activity reads the diff / posts the comment
with the project's forge client (``bench/_bare_agent_acts.py``). No ledger, budgets, kill switch,
idempotency, memo, search attributes or patches. Imported by the worker sandbox, so no side effects
at import and only ``temporalio`` + the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy

AGENT_WORKFLOW = "BenchBareAgentLoop"
AGENT_MODEL = "bench.bare_agent.model"
AGENT_TOOL = "bench.bare_agent.tool"
MAX_MODEL_CALLS = 3


@dataclass
class AgentStart:
    key: str
    """Sent as the work-key header: the model simulator counts calls per key and version."""
    version: str
    owner: str
    repo: str
    number: int
    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    max_output_tokens: int


@dataclass
class AgentModelCall:
    key: str
    version: str
    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    max_output_tokens: int


@dataclass
class AgentToolCall:
    id: str
    name: str
    arguments: str


@dataclass
class AgentAnswer:
    message: dict[str, Any]
    """The assistant message, as the next one of the conversation."""
    tool_calls: list[AgentToolCall] = field(default_factory=list)
    finish_reason: str = ""


@dataclass
class AgentToolRun:
    owner: str
    repo: str
    number: int
    name: str
    arguments: str


@dataclass
class AgentToolAnswer:
    content: str
    external_id: str = ""
    """The posted comment's id (empty for a read)."""


@dataclass
class AgentResult:
    key: str
    model_calls: int
    tools: list[str]
    """The tools run, in order."""
    diff_chars: int
    comment_ids: list[str]
    finish_reason: str


@workflow.defn(name=AGENT_WORKFLOW)
class BareAgentWorkflow:
    @workflow.run
    async def run(self, start: AgentStart) -> AgentResult:
        messages = list(start.messages)
        models, tools, comments, diff_chars, finish = 0, [], [], 0, ""
        retry = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=5)
        while models < MAX_MODEL_CALLS:
            answer = await workflow.execute_activity(
                AGENT_MODEL, AgentModelCall(start.key, start.version, start.model, messages, start.tools,
                                            start.max_output_tokens),
                result_type=AgentAnswer, start_to_close_timeout=timedelta(seconds=60), retry_policy=retry)
            models += 1
            finish = answer.finish_reason
            messages.append(answer.message)
            if not answer.tool_calls:
                break
            for call in answer.tool_calls:
                done = await workflow.execute_activity(
                    AGENT_TOOL, AgentToolRun(start.owner, start.repo, start.number, call.name, call.arguments),
                    result_type=AgentToolAnswer, start_to_close_timeout=timedelta(seconds=30), retry_policy=retry)
                tools.append(call.name)
                if done.external_id:
                    comments.append(done.external_id)
                else:
                    diff_chars += len(done.content)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": done.content})
        return AgentResult(start.key, models, tools, diff_chars, comments, finish)
