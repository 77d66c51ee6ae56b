"""``tasks:`` in the configuration: defaults, validation in the config's pydantic style, and a name
that is not a registered task stopping the API and the worker at start."""

from __future__ import annotations

import pytest

from sluicegate.config.settings import DEFAULT_CONFIG_FILE, ConfigError, load_settings
from sluicegate.services.intake import enabled_tasks


def _load(**env: str):
    return load_settings(DEFAULT_CONFIG_FILE, env=env)


def test_both_tasks_are_served_by_default_with_the_four_labels():
    s = _load()
    assert s.tasks.enabled == ["review", "triage"]
    assert s.tasks.triage.labels == ["bug", "enhancement", "question", "documentation"]
    assert [t.name for t in enabled_tasks(s)] == ["review", "triage"]


@pytest.mark.parametrize("key, value, says", [
    ("SLUICEGATE__TASKS__TRIAGE__LABELS", '["bug", "BUG"]', "listed twice"),
    ("SLUICEGATE__TASKS__TRIAGE__LABELS", '[" bug"]', "surrounding spaces"),
    ("SLUICEGATE__TASKS__TRIAGE__LABELS", '["' + "x" * 51 + '"]', "1-50"),
    ("SLUICEGATE__TASKS__TRIAGE__LABELS", '["a,b"]', "no control characters"),
    ("SLUICEGATE__TASKS__ENABLED", '["Review"]', "tasks.enabled"),
    ("SLUICEGATE__TASKS__ENABLED", '["review", "review"]', "twice"),
    ("SLUICEGATE__TASKS__COLOUR", '"blue"', "tasks.colour"),
])
def test_bad_task_settings_fail_loading_and_name_the_problem(key: str, value: str, says: str):
    with pytest.raises(ConfigError, match=says):
        _load(**{key: value})


def test_a_task_that_is_not_registered_stops_the_process_at_start():
    s = _load(SLUICEGATE__TASKS__ENABLED='["review", "tirage"]')  # well-formed: only the registry knows
    with pytest.raises(ConfigError, match="tasks.enabled: no task named 'tirage'"):
        enabled_tasks(s)
