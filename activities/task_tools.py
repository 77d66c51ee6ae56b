"""The generic host of registered tasks' tools: each handler a task declares becomes one activity.

A task's package implements its tools against :class:`tasks.spec.ToolKit` (``tasks/<name>/``);
this module turns every such :class:`~tasks.spec.ToolSpec` with a handler into a Temporal activity
registered under the spec's activity name, so a new task adds no code here. Every call, in order:

1. refuses while a kill covers the work key, its tenant or everything (``Killed``, non-retryable),
   reads included;
2. checks the tenant's egress allow-list for the forge;
3. runs the handler with a :class:`HostedKit`: the forge client, the task's config section,
   heartbeats (``Progress``), signed comment markers, and :meth:`HostedKit.mutate`, which runs an
   effect through the tool gateway (side-effect ledger: exactly once per operation key, fencing,
   reconcile after a lost attempt, credential check) with forge errors mapped for the gateway;
4. maps a forge error the handler let through to the activity failure every tool uses
   (``ToolRateLimited`` / ``ToolUnavailable`` retried, ``ToolRequestRejected`` not).

The review task's tools are not hosted here (``activities/forge_tools.py``, ``artifact_tools.py``).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, Awaitable, Callable, Iterable

from temporalio import activity

from activities.egress import EgressPolicy
from activities.forge_failure import as_tool_error, forge_activity_error
from activities.gateway import Mutation, ToolGateway
from activities.heartbeat import Progress
from activities.keys import operation_key
from activities.markers import CommentMarks
from intake.identity import with_tenant
from sluicegate.forge.client import ForgeClient, ForgeError
from sluicegate.forge.progress_reads import ProgressSink
from tasks.spec import Effect, EffectDone, TaskSpec, TaskToolCall, ToolSpec
from workflows.contracts import ToolRequest, ToolResult

__all__ = ["HostedKit", "TaskTools"]


class HostedKit:
    """The :class:`tasks.spec.ToolKit` the worker gives a task's tool handler."""

    def __init__(self, forge: ForgeClient, gateway: ToolGateway, marks: CommentMarks, options: Any, tool: str) -> None:
        self.forge = forge
        self.options = options
        self._gateway = gateway
        self._marks = marks
        self._tool = tool

    def progress(self) -> ProgressSink:
        return Progress(tool=self._tool)

    def marker(self, operation_key: str) -> str:
        return self._marks.marker(operation_key)

    def is_effect_of(self, comment: dict[str, Any], operation_key: str) -> bool:
        return self._marks.is_effect_of(comment, operation_key)

    async def mutate(self, call: TaskToolCall, operation: str, perform: Callable[[str], Awaitable[Effect]],
                     reconcile: Callable[[str], Awaitable[Effect | None]], detail: str = "") -> EffectDone:
        discriminator = f"{call.effect_discriminator}\x1f{detail}" if detail else call.effect_discriminator
        op_key = operation_key(call.work_key, operation, call.input_version, discriminator)
        # Like post_review_comment: the key derives from the work key the run carries; the ledger row and
        # the kill check use today's form of it.
        mutation = Mutation(op_key, with_tenant(call.work_key, call.tenant), operation, call.input_version,
                            call.generation, call.tenant)

        async def perform_() -> Effect:
            try:
                return await perform(op_key)
            except ForgeError as exc:
                raise as_tool_error(exc) from None

        async def reconcile_() -> Effect | None:
            try:
                return await reconcile(op_key)
            except ForgeError as exc:
                raise as_tool_error(exc) from None

        done = await self._gateway.mutate(mutation, perform_, reconcile_)
        return EffectDone(op_key, done.external_id, done.result, done.reconciled, done.replayed)


def _call(req: ToolRequest) -> TaskToolCall:
    """``tasks.spec.TaskToolCall`` mirrors the workflow's ``ToolRequest`` (tasks may not import workflows):
    copied by field name, so a field renamed on one side fails here rather than landing in the wrong slot."""
    return TaskToolCall(**{f.name: getattr(req, f.name) for f in fields(TaskToolCall)})


class TaskTools:
    """Builds the activities of the given tasks' hosted tools (``activities()``, for the worker)."""

    def __init__(self, specs: Iterable[TaskSpec], options: Callable[[TaskSpec], Any], forge: ForgeClient,
                 gateway: ToolGateway, marks: CommentMarks = CommentMarks(),
                 egress: EgressPolicy | None = None) -> None:
        """``options(spec)``: the task's configuration section (``settings.tasks.<section>``) or None."""
        self._specs = tuple(specs)
        self._options = options
        self._forge = forge
        self._gateway = gateway
        self._marks = marks
        self._egress = egress

    def activities(self) -> list[Callable[..., Any]]:
        return [self._activity(spec, tool) for spec in self._specs for tool in spec.activities().values()]

    def _activity(self, spec: TaskSpec, tool: ToolSpec) -> Callable[..., Any]:
        options = self._options(spec)

        async def run(req: ToolRequest) -> ToolResult:
            return await self.run(spec, tool, options, req)

        run.__name__ = run.__qualname__ = f"{spec.name}_{tool.name}"
        return activity.defn(name=tool.activity)(run)

    async def run(self, spec: TaskSpec, tool: ToolSpec, options: Any, req: ToolRequest) -> ToolResult:
        await self._gateway.refuse_if_killed(with_tenant(req.work_key, req.tenant), req.tenant)
        if self._egress is not None:
            self._egress.check(req.tenant, self._forge.base_url)
        info = activity.info()
        if info.attempt > 1 and info.heartbeat_details:
            activity.logger.info("%s attempt %d; the last attempt's progress: %s", tool.name, info.attempt,
                                 info.heartbeat_details[0], extra={"work_key": req.work_key})
        kit = HostedKit(self._forge, self._gateway, self._marks, options, tool.name)
        assert tool.handler is not None
        try:
            answer = await tool.handler(kit, _call(req))
        except ForgeError as exc:
            raise forge_activity_error(exc, f"{tool.name} on {req.owner}/{req.repo}#{req.number}",
                                       prefix="Tool") from None
        return ToolResult(content=answer.content, operation_key=answer.operation_key, external_id=answer.external_id,
                          reconciled=answer.reconciled, attempt=info.attempt)
