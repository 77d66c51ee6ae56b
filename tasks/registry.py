"""The task catalogue: every subpackage of ``tasks`` that exports ``SPEC`` (a :class:`TaskSpec`).

Discovery runs once, at import time, from the code on disk (``pkgutil`` over this package, names
sorted), so every process and every workflow replay sees the same catalogue; workflow code only
looks specs up (:func:`for_work_key`), never discovers, reads configuration or the environment.
Which tasks a deployment *serves* is configuration (``tasks.enabled``), applied by the wiring:
intake accepts triggers only for enabled tasks (:func:`github_mappers`, :func:`enabled`), the
worker registers only their tools' activities. A work order of a registered but disabled task
that is already admitted still runs to its end (its activities are then missing: it fails, the
ledger records why) — disable a task only after draining it (``docs/tasks.md``).
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from types import MappingProxyType
from typing import Iterable, Mapping

import tasks
from intake.github import GithubMapper
from tasks.spec import TASK_NAME, TaskSpec

_NAME = re.compile(TASK_NAME)


class UnknownTask(ValueError):
    """A task name that is not registered (not a subpackage of ``tasks`` exporting ``SPEC``)."""


def _discover() -> Mapping[str, TaskSpec]:
    found: dict[str, TaskSpec] = {}
    for module in sorted(pkgutil.iter_modules(tasks.__path__), key=lambda m: m.name):
        if not module.ispkg or not _NAME.fullmatch(module.name):
            continue
        spec = getattr(importlib.import_module(f"tasks.{module.name}"), "SPEC", None)
        if not isinstance(spec, TaskSpec):
            continue
        if spec.name != module.name:
            raise RuntimeError(f"tasks.{module.name}.SPEC is named {spec.name!r}; a task's name is its package's")
        found[spec.name] = spec
    return MappingProxyType(found)


TASKS: Mapping[str, TaskSpec] = _discover()
"""Every registered task by name (import-time, deterministic)."""


def names() -> tuple[str, ...]:
    return tuple(TASKS)


def get(name: str) -> TaskSpec:
    try:
        return TASKS[name]
    except KeyError:
        raise UnknownTask(f"no task named {name!r} (registered: {', '.join(TASKS)})") from None


def task_of(work_key: str) -> str:
    """The task a work key names: its suffix after the last ``:``."""
    return work_key.rpartition(":")[2]


def for_work_key(work_key: str) -> TaskSpec | None:
    """The spec of the task a work key names; ``None`` when no such task is registered."""
    return TASKS.get(task_of(work_key))


def enabled(names_: Iterable[str]) -> tuple[TaskSpec, ...]:
    """The specs of the configured ``tasks.enabled``; :class:`UnknownTask` for a name not registered
    (a typo must stop the process at start, not silently drop a task's triggers)."""
    return tuple(get(n) for n in dict.fromkeys(names_))


def github_mappers(specs: Iterable[TaskSpec]) -> dict[str, GithubMapper]:
    """GitHub event name -> mapper, for the given (enabled) tasks; two tasks claiming one event is an error."""
    mappers: dict[str, GithubMapper] = {}
    owner: dict[str, str] = {}
    for spec in specs:
        for event, mapper in spec.github.items():
            if event in mappers:
                raise RuntimeError(f"GitHub event {event!r} is mapped by both {owner[event]!r} and {spec.name!r}")
            mappers[event], owner[event] = mapper, spec.name
    return mappers


def for_github_event(event: str, specs: Iterable[TaskSpec] | None = None) -> TaskSpec | None:
    """The task whose trigger mapping handles GitHub event ``event`` (among ``specs``; default all)."""
    for spec in TASKS.values() if specs is None else specs:
        if event in spec.github:
            return spec
    return None


def tool_activity_names() -> frozenset[str]:
    """Every tool activity name any registered task declares (hosted or built in)."""
    return frozenset(t.activity for spec in TASKS.values() for t in spec.loop.tools)
