"""The bare agent side of ``bench/loop_bench.py``: its two activities, its orders and their check.

The activities make the calls an agent makes anyway, as the ``AgentLoop``'s do, minus the runtime:
the model activity one Chat Completions request through the real ``openai`` client (``max_retries=0``,
the same messages, tools, output cap and work-key headers), the tool activity the review's
``get_pull_request_diff`` (the forge client's streamed diff read) or ``post_review_comment`` (its
comment post). No ledger, budgets, kill switch, egress check, idempotency marker or heartbeats.
"""

from __future__ import annotations

import json

from openai import AsyncOpenAI
from temporalio import activity

from activities.model import VERSION_HEADER, WORK_KEY_HEADER
from bench._bare_agent import (
    AGENT_MODEL, AGENT_TOOL, AgentAnswer, AgentModelCall, AgentResult, AgentStart, AgentToolAnswer, AgentToolCall,
    AgentToolRun,
)
from sluicegate.forge.client import ForgeClient
from workflows.loop_plan import plan_for
from workflows.contracts import WorkOrder

GET_DIFF, POST_COMMENT = "get_pull_request_diff", "post_review_comment"
AGENT_TOOLS = (GET_DIFF, POST_COMMENT)
"""The simulator's reviewer on the bare agent side: model -> diff -> model -> comment -> model (stop)."""


class BareAgentActivities:
    def __init__(self, model: AsyncOpenAI, forge: ForgeClient, tenant: str) -> None:
        self._model = model
        self._forge = forge
        self._tenant = tenant

    @activity.defn(name=AGENT_MODEL)
    async def model(self, call: AgentModelCall) -> AgentAnswer:
        completion = await self._model.chat.completions.create(
            model=call.model, messages=call.messages, tools=call.tools,
            max_completion_tokens=call.max_output_tokens,
            extra_headers={WORK_KEY_HEADER: call.key, VERSION_HEADER: call.version})
        choice = completion.choices[0]
        calls = [AgentToolCall(c.id, c.function.name, c.function.arguments)
                 for c in (choice.message.tool_calls or []) if c.type == "function"]
        message: dict = {"role": "assistant", "content": choice.message.content}
        if calls:
            message["tool_calls"] = [{"id": c.id, "type": "function",
                                      "function": {"name": c.name, "arguments": c.arguments}} for c in calls]
        return AgentAnswer(message, calls, choice.finish_reason or "")

    @activity.defn(name=AGENT_TOOL)
    async def tool(self, run: AgentToolRun) -> AgentToolAnswer:
        if run.name == GET_DIFF:
            return AgentToolAnswer(await self._forge.get_pull_diff(run.owner, run.repo, run.number,
                                                                   tenant=self._tenant))
        if run.name == POST_COMMENT:
            body = json.loads(run.arguments or "{}").get("body") or ""
            comment = await self._forge.post_comment(run.owner, run.repo, run.number, body, tenant=self._tenant)
            return AgentToolAnswer(f"comment posted: {comment.get('html_url') or comment['id']}", str(comment["id"]))
        return AgentToolAnswer(f"unknown tool {run.name!r}")

    @property
    def activities(self) -> list:
        return [self.model, self.tool]


def agent_start(order: WorkOrder, key: str, max_output_tokens: int) -> AgentStart:
    """The bare agent's start for ``order``'s pull request: the review's first messages and tools as
    the ``AgentLoop`` offers them today (``workflows.loop_plan.plan_for``, artifact reads on)."""
    plan = plan_for(order, True)
    assert plan is not None, order.work_key
    return AgentStart(key, order.input_version, order.owner, order.repo, order.number, order.model,
                      list(plan.messages), list(plan.tools), max_output_tokens)


def agent_problems(results: list[AgentResult], by_work: dict[str, int], starts: dict[str, AgentStart],
                   total: int) -> tuple[str, list[str]]:
    """A check line and the problems: every bare agent order made 3 model calls that the model simulator
    counted under its key, ran the diff read and the comment post, read a diff and posted one comment."""
    bad = [r.key for r in results if r.model_calls != 3 or tuple(r.tools) != AGENT_TOOLS
           or r.diff_chars <= 0 or len(r.comment_ids) != 1 or r.finish_reason != "stop"]
    counted = {k: by_work.get(f"{k}@{s.version}", 0) for k, s in starts.items()}
    miscounted = [k for k, n in counted.items() if n != 3]
    comments = {c for r in results for c in r.comment_ids}
    line = (f"bare agent: {len(results)} orders, {len(bad)} not (3 model calls, diff read + comment posted, stop); "
            f"model simulator counted {sum(counted.values())} calls under their keys (expected {total * 3}), "
            f"{len(miscounted)} keys not 3; {sum(r.diff_chars for r in results)} diff characters read, "
            f"{len(comments)} distinct comments posted")
    problems = []
    if len(results) != total or bad:
        problems.append(f"bare agent orders off: {len(results)}/{total}, bad {bad[:3]}")
    if miscounted or len(counted) != total:
        problems.append(f"model simulator counts off for bare agent keys {miscounted[:3]}")
    if len(comments) != total:
        problems.append(f"bare agent posted {len(comments)} distinct comments, want {total}")
    return line, problems
