"""Workflows for ``test_sandbox_runner.py``: imported into the sandbox, so temporalio and the standard
library only, and no side effects at import."""

from __future__ import annotations

import random

from temporalio import workflow


@workflow.defn(name="SandboxProbeDeterministic")
class DeterministicProbe:
    @workflow.run
    async def run(self, n: int) -> int:
        workflow.upsert_memo({"seen": n})
        return n + 1


@workflow.defn(name="SandboxProbeRandom")
class RandomProbe:
    """Calls the process's ``random`` module: the sandbox must refuse it (fail the workflow task)."""

    @workflow.run
    async def run(self) -> float:
        return random.random()
