"""Workflows for ``test_sandbox_runner.py``: imported into the sandbox, so temporalio and the standard
library only, and no side effects at import."""

from __future__ import annotations

import random
import time

RUNS: list[int] = []
"""Appended to by every run of :class:`ModuleStateProbe`: a fresh module per run keeps it at one entry."""

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


@workflow.defn(name="SandboxProbeModuleState")
class ModuleStateProbe:
    """Appends to this module's ``RUNS``: each run re-imports the module in its own sandbox, so it sees one."""

    @workflow.run
    async def run(self, n: int) -> list[int]:
        RUNS.append(n)
        return list(RUNS)


@workflow.defn(name="SandboxProbeEscape")
class EscapeProbe:
    """Reads the wall clock or a file: the sandbox must refuse both, as it refuses ``random``."""

    @workflow.run
    async def run(self, kind: str) -> str:
        if kind == "clock":
            return str(time.time())
        with open(__file__) as f:
            return f.read(10)
