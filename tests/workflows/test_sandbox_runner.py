"""The worker's workflow runner (``sluicegate/temporal/sandbox_runner.py``): Temporal's sandbox with
each sandbox entry compiled once. Same sandbox, same restrictions: a workflow that calls a
non-deterministic function still fails its workflow task, and the worker Sluicegate builds uses it."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import uuid
from contextlib import AsyncExitStack
from pathlib import Path

import ledger
import pytest
from temporalio import workflow
from temporalio.api.common.v1 import Payloads
from temporalio.api.enums.v1 import CommandType, EventType
from temporalio.api.failure.v1 import Failure
from temporalio.converter import DataConverter
from temporalio.worker import Worker, WorkflowInstanceDetails
from temporalio.worker._command_aware_visitor import CommandInfo
from temporalio.worker.workflow_sandbox._runner import _fake_info
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from sluicegate.temporal.module_code import cache_module_code, compiled_source
from sluicegate.temporal.sandbox_runner import CompiledSandboxRunner, _CompiledInstance, _Instance, compiled, workflow_runner
from tests.support.sims import settings_for
from tests.workflows._context_probe import ContextProbe, ContextProbeChild, echo
from tests.workflows._sandbox_probe import RUNS, DeterministicProbe, EscapeProbe, ModuleStateProbe, RandomProbe
from worker import create_worker


def test_the_runner_is_the_compiled_one_and_the_worker_uses_it():
    assert type(workflow_runner()) is CompiledSandboxRunner
    assert isinstance(workflow_runner(), SandboxedWorkflowRunner)  # same restrictions, same per-run sandbox


async def test_create_worker_runs_workflows_in_the_compiled_sandbox(temporal_env, sims, tmp_path, task_queue):
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    async with AsyncExitStack() as stack:
        worker = await create_worker(temporal_env.client, settings_for(sims, url), stack, task_queue)
    assert type(worker.config()["workflow_runner"]) is CompiledSandboxRunner


async def test_workflows_run_and_sandbox_entries_are_compiled_once(temporal_env, task_queue):
    before = compiled.cache_info()
    async with Worker(temporal_env.client, task_queue=task_queue, workflows=[DeterministicProbe],
                      workflow_runner=workflow_runner()):
        results = [await temporal_env.client.execute_workflow(DeterministicProbe.run, n, id=f"probe-{uuid.uuid4()}",
                                                              task_queue=task_queue) for n in range(3)]
    after = compiled.cache_info()
    assert results == [1, 2, 3]
    assert after.hits - before.hits >= 3 * 3  # every run enters its sandbox through cached code objects
    assert after.currsize - before.currsize <= 5  # the probe's import and the entries, not one per call



@pytest.fixture(autouse=True)
def _no_bytecode_for_the_probes(monkeypatch):
    """The compile-cache assertions need the probes' source compiled on import, as on a tree without
    bytecode (CI sets ``PYTHONDONTWRITEBYTECODE=1``): a ``.pyc`` left by a run without it is removed,
    and none is written during the test, whatever the environment."""
    import tests.workflows._context_probe as context_probe
    import tests.workflows._sandbox_probe as sandbox_probe

    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    for module in (sandbox_probe, context_probe):
        Path(importlib.util.cache_from_source(module.__file__)).unlink(missing_ok=True)

async def _first_task_failure(client, task_queue, workflow, *args) -> str | None:
    before = compiled_source.cache_info().hits
    async with Worker(client, task_queue=task_queue, workflows=[workflow], workflow_runner=workflow_runner()):
        handle = await client.start_workflow(workflow.run, *args, id=f"probe-{uuid.uuid4()}", task_queue=task_queue)
        failed = None
        for _ in range(200):
            async for e in handle.fetch_history_events():
                if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
                    failed = e.workflow_task_failed_event_attributes.failure.message
            if failed is not None:
                break
            await asyncio.sleep(0.05)
        await handle.terminate("probe done")
    # the sandbox imported the probe's module through the once-compiled code (module_code.py), so the
    # refusal below is proved on that path, not only on a fresh compile
    assert compiled_source.cache_info().hits > before
    return failed


async def test_a_non_deterministic_call_still_fails_the_workflow_task(temporal_env, task_queue):
    failed = await _first_task_failure(temporal_env.client, task_queue, RandomProbe)
    assert failed is not None and "Cannot access random.random" in failed, failed  # RestrictedWorkflowAccessError


@pytest.mark.parametrize(("kind", "refused"), [("clock", "time.time"), ("file", "__builtins__.open")])
async def test_the_clock_and_files_are_still_refused(temporal_env, task_queue, kind, refused):
    failed = await _first_task_failure(temporal_env.client, task_queue, EscapeProbe, kind)
    assert failed is not None and f"Cannot access {refused}" in failed, failed


async def test_each_run_imports_the_workflow_module_afresh(temporal_env, task_queue):
    """Code objects are shared, globals are not: module state a run changes is gone for the next run."""
    async with Worker(temporal_env.client, task_queue=task_queue, workflows=[ModuleStateProbe],
                      workflow_runner=workflow_runner(), max_cached_workflows=0):
        seen = [await temporal_env.client.execute_workflow(ModuleStateProbe.run, n, id=f"probe-{uuid.uuid4()}",
                                                           task_queue=task_queue) for n in range(3)]
    assert seen == [[0], [1], [2]]
    assert RUNS == []  # the worker's own import of the module is untouched


def _probe_instance():
    defn = workflow._Definition.must_from_class(DeterministicProbe)
    return CompiledSandboxRunner().create_instance(WorkflowInstanceDetails(
        payload_converter_factory=DataConverter.default._new_payload_converter,
        failure_converter_class=DataConverter.default.failure_converter_class, interceptor_classes=[], defn=defn,
        info=_fake_info, randomness_seed=-1, extern_functions={}, disable_eager_activity_execution=False,
        worker_level_failure_exception_types=[], patch_activation_callback=None,
        last_completion_result=Payloads(), last_failure=Failure()))


@pytest.mark.parametrize("command_info", [
    None, CommandInfo(CommandType.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK, 7),
    CommandInfo(CommandType.COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION, 1),
    CommandInfo(CommandType.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION, 0)])
async def test_payload_contexts_are_the_sdks_without_entering_the_sandbox(command_info):
    instance = _probe_instance()
    def entries() -> int:
        info = compiled.cache_info()
        return info.hits + info.misses

    before = entries()
    ours = (instance.get_serialization_context(command_info), instance.get_external_store_context(command_info))
    assert entries() == before  # answered outside: no exec, no restrictions applied
    sdk = (_Instance.get_serialization_context(instance, command_info),
           _Instance.get_external_store_context(instance, command_info))
    assert entries() == before + 2  # the SDK's own way enters the sandbox for each
    assert ours == sdk and ours[0] is not None and ours[1].target is not None
    assert instance.importer.restriction_context.is_runtime is False


async def test_workflow_modules_are_compiled_once_and_still_run_afresh_per_run(temporal_env, task_queue):
    """The worker's runner caches the compile of a workflow's module (``module_code.py``), not the module:
    runs still see their own module state, and the source is compiled once however many runs import it."""
    import tests.workflows._sandbox_probe as probe

    compiled_source.cache_clear()
    async with Worker(temporal_env.client, task_queue=task_queue, workflows=[ModuleStateProbe],
                      workflow_runner=workflow_runner(), max_cached_workflows=0):
        seen = [await temporal_env.client.execute_workflow(ModuleStateProbe.run, n, id=f"probe-{uuid.uuid4()}",
                                                           task_queue=task_queue) for n in range(3)]
    assert seen == [[0], [1], [2]]  # each run executed the module from the top, in its own sandbox
    cache = compiled_source.cache_info()
    assert cache.misses == 1 and cache.hits >= 3, cache  # the worker's validation + 3 runs, one compile
    assert cache_module_code(probe) is True and not cache_module_code(uuid)  # a stdlib module is left alone
    source = Path(probe.__file__).read_bytes()
    assert compiled_source(source, probe.__file__) is compiled_source(source, probe.__file__)
    assert compiled_source(source + b"\nEDITED = 1\n", probe.__file__) is not compiled_source(source, probe.__file__)


ASKED: list[tuple[str, object, object]] = []


class _ComparingRunner(CompiledSandboxRunner):
    """The worker's runner, each payload context answered both ways: outside the sandbox (the runner's way)
    and by the SDK's own ``_Instance`` (an exec in the sandbox)."""

    def create_instance(self, det: WorkflowInstanceDetails):
        return _ComparingInstance(det, self.runner_class, self.restrictions)


class _ComparingInstance(_CompiledInstance):
    def get_serialization_context(self, command_info):
        ours = super().get_serialization_context(command_info)
        ASKED.append((_kind(command_info), ours, _Instance.get_serialization_context(self, command_info)))
        return ours

    def get_external_store_context(self, command_info):
        ours = super().get_external_store_context(command_info)
        ASKED.append((_kind(command_info), ours, _Instance.get_external_store_context(self, command_info)))
        return ours


def _kind(command_info) -> str:
    return "none" if command_info is None else CommandType.Name(command_info.command_type)


async def test_payload_contexts_match_the_sdks_for_every_command_kind(temporal_env, task_queue):
    """A real run issuing an activity, a local activity, a child workflow, a signal to it, a memo upsert,
    an update, a query and a continue-as-new: every context the worker asked for is the SDK's."""
    ASKED.clear()
    wf_id = f"ctx-{uuid.uuid4()}"
    async with Worker(temporal_env.client, task_queue=task_queue, workflows=[ContextProbe, ContextProbeChild],
                      activities=[echo], workflow_runner=_ComparingRunner()):
        handle = await temporal_env.client.start_workflow(ContextProbe.run, True, id=wf_id, task_queue=task_queue)
        assert await handle.query(ContextProbe.state) == "q"
        assert await handle.execute_update(ContextProbe.release, "u") == "u"
        second = temporal_env.client.get_workflow_handle(wf_id)
        for _ in range(600):  # the continued run: same id, a new run
            desc = await second.describe()
            if desc.run_id != handle.first_execution_run_id and desc.status is not None and desc.status.name == "RUNNING":
                break
            await asyncio.sleep(0.05)
        await second.execute_update(ContextProbe.release, "v")
        assert await second.result() == "abc"
    kinds = {kind for kind, _, _ in ASKED}
    expected = {"none", "COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK", "COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION",
                "COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION", "COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION"}
    # (the SDK's visitor asks for a local activity as SCHEDULE_ACTIVITY_TASK, and for continue-as-new, memo
    # upserts, queries and updates with no command: the workflow's own context)
    assert expected <= kinds, sorted(kinds)
    assert [(kind, ours, sdk) for kind, ours, sdk in ASKED if ours != sdk] == []
    assert any(getattr(ours, "activity_type", None) == "ContextProbeEcho" and ours.is_local for _, ours, _ in ASKED)
    assert any(getattr(ours, "workflow_id", None) == f"{wf_id}-child" for _, ours, _ in ASKED)
