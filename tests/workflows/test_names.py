"""``workflows/names.py`` is the one home of registered names: it matches what the code registers
and every name the committed histories recorded (a changed value would strand running work)."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
from pathlib import Path

import activities
import workflows
from tasks import registry
from workflows import names

HISTORIES = sorted((Path(__file__).parent / "histories").glob("*.json"))


def _registered() -> tuple[set[str], set[str], set[str], set[str]]:
    wf, act, sig, qry = set(), set(), set(), set()
    for pkg in (workflows, activities):
        for mod in pkgutil.iter_modules(pkg.__path__):
            module = importlib.import_module(f"{pkg.__name__}.{mod.name}")
            for _, cls in inspect.getmembers(module, inspect.isclass):
                if cls.__module__ != module.__name__:
                    continue
                defn = getattr(cls, "__temporal_workflow_definition", None)
                if defn is not None:
                    wf.add(defn.name)
                    sig.update(n for n in defn.signals if n)
                    qry.update(n for n in defn.queries if n)
                for _, fn in inspect.getmembers(cls, inspect.isfunction):
                    a = getattr(fn, "__temporal_activity_definition", None)
                    if a is not None:
                        act.add(a.name)
    for spec in registry.TASKS.values():  # tools a task implements, hosted by activities/task_tools.py
        act.update(spec.activities())
    return wf, act, sig, qry


def test_names_match_what_the_code_registers():
    wf, act, sig, qry = _registered()
    assert wf == names.WORKFLOWS
    assert act == names.ACTIVITIES | registry.tool_activity_names()  # a task's own names may live in its package
    assert sig == {names.WORK_ORDER_SIGNAL, names.KILL_SIGNAL}
    assert qry == {names.PROGRESS_QUERY, names.GOAL_PROGRESS_QUERY}


def test_every_recorded_name_is_still_a_name():
    recorded: set[str] = set()
    for path in HISTORIES:
        for event in json.loads(path.read_text())["events"]:
            for key, attrs in event.items():
                if not key.endswith("Attributes") or not isinstance(attrs, dict):
                    continue
                for field in ("workflowType", "activityType"):
                    if field in attrs:
                        recorded.add(attrs[field]["name"])
                if "signalName" in attrs:
                    recorded.add(attrs["signalName"])
    assert HISTORIES and recorded
    assert recorded <= (names.WORKFLOWS | names.ACTIVITIES | registry.tool_activity_names()
                        | {names.WORK_ORDER_SIGNAL, names.KILL_SIGNAL})


def test_the_review_and_triage_tools_are_listed_here():
    """The two tasks shipped with Sluicegate keep their tools' names in the one list (a task added
    later may keep its names in its own package: ``docs/tasks.md``)."""
    shipped = {t.activity for name in ("review", "triage") for t in registry.get(name).loop.tools}
    assert shipped <= names.ACTIVITIES
