"""A workflow for ``test_sandbox_runner.py`` that issues every kind of command carrying payloads (activity,
local activity, child workflow, signal to another workflow, memo upsert, continue-as-new) and answers a
query and an update: imported into the sandbox, so temporalio and the standard library only."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import activity, workflow


@activity.defn(name="ContextProbeEcho")
async def echo(text: str) -> str:
    return text


@workflow.defn(name="ContextProbeChild")
class ContextProbeChild:
    def __init__(self) -> None:
        self.poked = False

    @workflow.run
    async def run(self, text: str) -> str:
        await workflow.wait_condition(lambda: self.poked)
        return text

    @workflow.signal
    def poke(self, text: str) -> None:
        self.poked = True


@workflow.defn(name="ContextProbe")
class ContextProbe:
    def __init__(self) -> None:
        self.go = False

    @workflow.run
    async def run(self, again: bool) -> str:
        timeout = timedelta(seconds=30)
        a = await workflow.execute_activity(echo, "a", start_to_close_timeout=timeout, task_queue=workflow.info().task_queue)
        b = await workflow.execute_local_activity(echo, "b", start_to_close_timeout=timeout)
        child = await workflow.start_child_workflow(ContextProbeChild.run, "c", id=f"{workflow.info().workflow_id}-child")
        await workflow.get_external_workflow_handle(child.id).signal(ContextProbeChild.poke, "d")
        c = await child
        workflow.upsert_memo({"seen": a + b + c})
        await workflow.wait_condition(lambda: self.go)
        if again:
            workflow.continue_as_new(False)
        return a + b + c

    @workflow.query
    def state(self) -> str:
        return "q"

    @workflow.update
    async def release(self, text: str) -> str:
        self.go = True
        await asyncio.sleep(0)
        return text
