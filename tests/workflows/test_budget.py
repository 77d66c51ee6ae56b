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


# --- the day-budget reservation bound (workflows/budget.py) ---------------------------------

from hypothesis import given, settings as hyp_settings, strategies as st  # noqa: E402

from workflows.budget import prompt_token_bound, settle_overshoot_usd, step_worst_case_usd  # noqa: E402

PRICES = st.builds(Price, *(st.floats(0, 100, allow_nan=False) for _ in range(4)))


@hyp_settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=400), cap=st.integers(1, 8192), price=PRICES, data=st.data())
def test_a_step_that_honours_the_cap_never_costs_more_than_its_reservation(text, cap, price, data):
    """Prompts in any script (one token per UTF-8 byte at most), any split into cached and
    uncached input, any split of the capped output into reasoning and visible output."""
    messages = [{"role": "user", "content": text}]
    bound = prompt_token_bound(messages, [])
    prompt = data.draw(st.integers(0, bound))
    cached = data.draw(st.integers(0, prompt))
    completion = data.draw(st.integers(0, cap))
    reasoning = data.draw(st.integers(0, completion))
    usage = usage_from_openai(prompt, completion, cached, reasoning)
    reserved = step_worst_case_usd(bound, cap, price)
    assert settle_overshoot_usd(reserved, usage, price) <= 1e-12 * max(1.0, reserved)


def test_the_prompt_bound_counts_bytes_not_characters():
    def extra(text: str) -> int:
        return prompt_token_bound([{"content": text}], []) - prompt_token_bound([{"content": ""}], [])

    assert (extra("a"), extra("é"), extra("語"), extra("🦀")) == (1, 2, 3, 4)


def test_a_provider_ignoring_the_cap_overshoots_by_the_excess_output_only():
    price = Price(input=1.0, cached_input=0.5, output=10.0, reasoning=10.0)
    reserved = step_worst_case_usd(1000, 100, price)
    over = TokenUsage(input=1000, output=120, reasoning=30)  # 50 tokens past the cap of 100
    assert settle_overshoot_usd(reserved, over, price) == pytest.approx(50 * 10.0 / 1_000_000)
    assert settle_overshoot_usd(reserved, TokenUsage(input=1000, output=70, reasoning=30), price) == 0.0
