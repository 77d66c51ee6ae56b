"""Budget arithmetic for one work order: pure functions, checked before every step.

Checking before a step (never after) means a run can overshoot its limit by at most one
step's usage; issue #4 adds reserve-before-call per tenant and per day.
"""

from __future__ import annotations

from workflows.contracts import Price, TaskBudget, TokenUsage

PER_MILLION = 1_000_000


def cost_usd(usage: TokenUsage, price: Price) -> float:
    """Spend for ``usage`` priced per category (USD per million tokens)."""
    return (usage.input * price.input + usage.cached_input * price.cached_input
            + usage.output * price.output + usage.reasoning * price.reasoning) / PER_MILLION


def usage_from_openai(prompt: int, completion: int, cached: int, reasoning: int) -> TokenUsage:
    """Split OpenAI's counters (cached ⊂ prompt, reasoning ⊂ completion) into disjoint categories."""
    cached = min(max(cached, 0), prompt)
    reasoning = min(max(reasoning, 0), completion)
    return TokenUsage(input=prompt - cached, cached_input=cached, output=completion - reasoning,
                      reasoning=reasoning)


def exhausted(budget: TaskBudget, steps: int, usage: TokenUsage, spent_usd: float,
              elapsed_seconds: float = 0.0) -> str | None:
    """``None`` if another step may run, else which limit stops it."""
    if elapsed_seconds >= budget.max_wall_seconds:
        return f"max-wall-time: {elapsed_seconds:.0f}s of {budget.max_wall_seconds:.0f}s used"
    if steps >= budget.max_steps:
        return f"max-steps: {steps} of {budget.max_steps} used"
    if usage.total >= budget.max_total_tokens:
        return f"max-tokens: {usage.total} of {budget.max_total_tokens} used"
    if spent_usd >= budget.max_usd:
        return f"max-usd: {spent_usd:.4f} of {budget.max_usd:.4f} spent"
    return None
