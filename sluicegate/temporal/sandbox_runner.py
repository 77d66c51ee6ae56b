"""The worker's workflow sandbox: Temporal's ``SandboxedWorkflowRunner``, minus one repeated compile.

The SDK enters a workflow's sandbox by ``exec``-ing a short source string: to activate it, and,
while encoding and decoding a workflow task, four times for every payload (``get_serialization_context``
and ``get_external_store_context``). ``exec`` of a string compiles it each time, about a third of the
~0.15 ms each entry costs (issue 11 item 6: a profile of ``bench/loop_bench.py``; the strings are a
handful of constants). :class:`CompiledSandboxRunner` compiles each distinct string once and hands the
code object to the same ``exec``: the same code runs in the same sandbox, with the same restrictions
and the same per-run module re-import, so determinism protection is unchanged
(``tests/workflows/test_sandbox_runner.py`` proves a non-deterministic call still fails the task).

The payloads' serialization and external-store contexts (asked once per payload and pass, the
bulk of the entries) are read from the in-sandbox instance without entering the sandbox at all: the
SDK code that answers them runs no workflow code and imports nothing (:func:`_asked_outside`).

It subclasses the SDK's private ``_Instance`` (temporalio is pinned in ``pyproject.toml``); when that
class does not look as expected, :func:`workflow_runner` falls back to the stock runner.
"""

from __future__ import annotations

import functools
import inspect
import logging
import sys
from dataclasses import dataclass
from types import CodeType
from typing import Any

from temporalio.worker import WorkflowInstance, WorkflowInstanceDetails, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from sluicegate.temporal.module_code import cache_module_code

log = logging.getLogger("sluicegate.worker")

try:  # the SDK's per-run sandbox instance: private, so checked before use
    from temporalio.worker.workflow_sandbox._runner import _Instance
except ImportError:  # pragma: no cover - a different SDK layout
    _Instance = None  # type: ignore[assignment,misc]


@functools.lru_cache(maxsize=64)
def compiled(code: str) -> CodeType:
    """``code`` compiled as ``exec`` compiles a string (file name ``<string>``), once per process."""
    return compile(code, "<string>", "exec")


IN_SANDBOX = "__temporal_in_sandbox"
"""The name the SDK's ``_Instance`` gives the in-sandbox instance in its globals."""


def _fits() -> bool:
    """Does the SDK's ``_Instance`` enter its sandbox through ``_run_code(code, **globals)``?"""
    run_code = getattr(_Instance, "_run_code", None)
    return run_code is not None and list(inspect.signature(run_code).parameters)[:2] == ["self", "code"]


if _Instance is not None:
    class _CompiledInstance(_Instance):
        def _run_code(self, code: Any, **extra_globals: Any) -> None:
            # The SDK annotates ``code: str`` but only passes it to ``exec``, which takes a code object too.
            super()._run_code(compiled(code) if isinstance(code, str) else code, **extra_globals)  # type: ignore[arg-type]

        def _in_sandbox(self, method: str) -> Any:
            """The in-sandbox instance's ``method``, or None (not created yet, or the SDK moved it)."""
            return getattr(self.globals_and_locals.get(IN_SANDBOX), method, None)

        def get_serialization_context(self, command_info: Any) -> Any:
            ask = self._in_sandbox("get_serialization_context")
            if ask is None:
                return super().get_serialization_context(command_info)
            return _asked_outside(self, ask, command_info)

        def get_external_store_context(self, command_info: Any) -> Any:
            ask = self._in_sandbox("get_external_store_context")
            if ask is None:
                return super().get_external_store_context(command_info)
            return _asked_outside(self, ask, command_info)

    def _asked_outside(instance: _Instance, ask: Any, command_info: Any) -> Any:
        """A payload's serialization (or external-store) context, from the in-sandbox instance without
        entering the sandbox: the SDK's code that answers it reads the run's info and its pending
        commands and builds a context object (no import, no workflow code), so the sandbox's import
        and builtins restrictions have nothing to guard there. The SDK asks once per payload and pass
        of every activation and completion (about 37 times per loop step, each an ``exec`` under the
        restrictions: 0.08 ms)."""
        instance.importer.restriction_context.is_runtime = True  # as the SDK's entry sets it
        try:
            return ask(command_info)
        finally:
            instance.importer.restriction_context.is_runtime = False


@dataclass(frozen=True)
class CompiledSandboxRunner(SandboxedWorkflowRunner):
    """``SandboxedWorkflowRunner`` whose instances ``exec`` precompiled code objects, and whose
    workflow modules are compiled once per process (``sluicegate/temporal/module_code.py``)."""

    def prepare_workflow(self, defn: Any) -> None:
        module = sys.modules.get(defn.cls.__module__)
        if module is not None:
            cache_module_code(module)
        super().prepare_workflow(defn)

    def create_instance(self, det: WorkflowInstanceDetails) -> WorkflowInstance:
        return _CompiledInstance(det, self.runner_class, self.restrictions)


def workflow_runner() -> WorkflowRunner:
    """The worker's runner: :class:`CompiledSandboxRunner`, or the SDK's own if its internals moved."""
    if _Instance is not None and _fits():
        return CompiledSandboxRunner()
    log.warning("temporalio's sandbox internals changed: using the stock SandboxedWorkflowRunner")
    return SandboxedWorkflowRunner()
