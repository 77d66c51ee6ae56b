"""Budget arithmetic (pure)."""

from __future__ import annotations

import pytest

from workflows.budget import cost_usd, exhausted, usage_from_openai
from workflows.contracts import Price, TaskBudget, TokenUsage


def test_openai_counters_split_into_disjoint_categories():
    usage = usage_from_openai(prompt=1000, completion=300, cached=640, reasoning=100)
    assert (usage.input, usage.cached_input, usage.output, usage.reasoning) == (360, 640, 200, 100)
    assert usage.total == 1300


def test_cost_prices_each_category():
    price = Price(input=2.0, cached_input=0.5, output=8.0, reasoning=16.0)
    usage = TokenUsage(input=1_000_000, cached_input=2_000_000, output=500_000, reasoning=250_000)
    assert cost_usd(usage, price) == pytest.approx(2.0 + 1.0 + 4.0 + 4.0)


@pytest.mark.parametrize("steps, tokens, usd, expected", [
    (0, 0, 0.0, None), (3, 0, 0.0, "max-steps"), (0, 1000, 0.0, "max-tokens"), (0, 0, 0.5, "max-usd")])
def test_exhausted_names_the_limit(steps, tokens, usd, expected):
    budget = TaskBudget(max_steps=3, max_total_tokens=1000, max_usd=0.5)
    result = exhausted(budget, steps, TokenUsage(input=tokens), usd)
    assert (result or "").startswith(expected or "") and (result is None) == (expected is None)


def test_wall_time_is_checked_first():
    budget = TaskBudget(max_steps=3, max_total_tokens=1000, max_usd=0.5, max_wall_seconds=60)
    assert exhausted(budget, 0, TokenUsage(), 0.0, elapsed_seconds=59.9) is None
    assert exhausted(budget, 0, TokenUsage(), 0.0, elapsed_seconds=60).startswith("max-wall-time")
