"""The bare baseline of ``bench/loop_bench.py``: a workflow that runs 5 no-op activities.

Same activity count and order as one ``AgentLoop`` review (model, tool, model, tool, model),
same timeouts and retry caps, but nothing else: no budget checks, ledger, search attributes,
messages or HTTP. Imported by the worker sandbox, so no side effects at import and only
``temporalio`` + the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.common import RetryPolicy

BARE_WORKFLOW = "BenchBareLoop"
BARE_MODEL = "bench.bare.model"
BARE_TOOL = "bench.bare.tool"
STEPS = ("model", "tool", "model", "tool", "model")


@dataclass
class BareStart:
    key: str
    steps: int = 5


@dataclass
class BareCall:
    key: str
    step: int


@dataclass
class BareAnswer:
    key: str
    step: int
    attempt: int = 1


@dataclass
class BareResult:
    key: str
    activities: int
    model_calls: int


@activity.defn(name=BARE_MODEL)
async def bare_model(call: BareCall) -> BareAnswer:
    return BareAnswer(call.key, call.step, activity.info().attempt)


@activity.defn(name=BARE_TOOL)
async def bare_tool(call: BareCall) -> BareAnswer:
    return BareAnswer(call.key, call.step, activity.info().attempt)


@workflow.defn(name=BARE_WORKFLOW)
class BareLoopWorkflow:
    @workflow.run
    async def run(self, start: BareStart) -> BareResult:
        done = models = 0
        for step in range(start.steps):
            kind = STEPS[step % len(STEPS)]
            model = kind == "model"
            await workflow.execute_activity(
                BARE_MODEL if model else BARE_TOOL, BareCall(start.key, step), result_type=BareAnswer,
                start_to_close_timeout=timedelta(seconds=60 if model else 30),
                retry_policy=RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=5))
            done += 1
            models += model
        return BareResult(start.key, done, models)
