"""``Price`` and ``TaskBudget`` exist twice on purpose: a pydantic config section (validated at load)
and a workflow payload dataclass (no pydantic in workflow code). The admitter and the worker copy
one into the other with ``**model_dump()``; this keeps the two field lists identical."""

from __future__ import annotations

import dataclasses

import pytest

from sluicegate.config.settings import TaskBudget as BudgetConfig
from sluicegate.config.model import Price as PriceConfig
from workflows.contracts import Price, TaskBudget


@pytest.mark.parametrize("config, payload", [(PriceConfig, Price), (BudgetConfig, TaskBudget)])
def test_the_config_section_and_the_payload_have_the_same_fields(config, payload):
    assert list(config.model_fields) == [f.name for f in dataclasses.fields(payload)]


def test_the_default_budget_copies_into_the_payload():
    assert dataclasses.asdict(TaskBudget(**BudgetConfig().model_dump())) == BudgetConfig().model_dump()
