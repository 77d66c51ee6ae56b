"""Recorded histories of the agent, maintenance, goal and scan workflows still replay on the current code.

A workflow change that is not guarded by ``workflow.patched`` fails here with a
non-determinism error instead of failing on running work after a deploy.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.converter import DataConverter
from temporalio.worker import Replayer

from sluicegate.temporal.converter import PayloadConverter
from sluicegate.temporal.sandbox_runner import workflow_runner
from workflows.agent_loop import AgentLoopWorkflow
from workflows.goal import GoalWorkflow
from workflows.maintenance import PruneDeliveriesWorkflow
from workflows.scan import ScanWorkflow

WORKFLOWS = [AgentLoopWorkflow, PruneDeliveriesWorkflow, GoalWorkflow, ScanWorkflow]

HISTORIES = sorted((Path(__file__).parent / "histories").glob("*.json"))


def test_there_are_histories_to_replay():
    assert HISTORIES, "no recorded histories under tests/workflows/histories"


@pytest.mark.parametrize("path", HISTORIES, ids=[p.stem for p in HISTORIES])
async def test_history_replays(path: Path):
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    result = await Replayer(workflows=WORKFLOWS).replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None


@pytest.mark.parametrize("path", HISTORIES, ids=[p.stem for p in HISTORIES])
async def test_history_replays_in_the_workers_sandbox(path: Path):
    """The same histories through the runner and the payload converter a worker uses (``CompiledSandboxRunner``,
    ``sluicegate/temporal/converter.py``; the histories are plaintext, so no codec), not only the SDK's stock
    sandbox and converter: a worker replays a run after a crash or an eviction with both."""
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    converter = dataclasses.replace(DataConverter.default, payload_converter_class=PayloadConverter)
    replayer = Replayer(workflows=WORKFLOWS, workflow_runner=workflow_runner(),
                        data_converter=converter)
    result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None
