"""Budget arithmetic: pure functions, checked before every step.

Task budget: checking before a step (never after) means a run can overshoot its limit by at
most one step's usage.

Day budgets reserve a step's *worst case* before the call (``step_worst_case_usd``), and it is a
true upper bound as long as the provider honours the output cap and bills at the configured
prices: the prompt cannot take more than one token per UTF-8 byte of its JSON (byte-level BPE
tokenizers never do; the JSON's keys and punctuation outnumber the few framing tokens a chat
template adds per message), priced at the dearer of input and cached input; output and
reasoning together cannot exceed ``max_completion_tokens`` (the step's output cap), priced at
the dearer of the two. So ``settle`` never charges more than was reserved, and a day limit is
overshot by $0. A provider that ignores the cap overshoots by exactly
``(output + reasoning - cap) x its price`` on that step (``settle_overshoot_usd``); the day row
records it, and the next reservation is refused.
"""

from __future__ import annotations

import json
from typing import Any

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


def prompt_token_bound(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
    """The most tokens this prompt can be billed as: one per UTF-8 byte of its JSON."""
    size = len(json.dumps(messages, ensure_ascii=False).encode())
    return size + (len(json.dumps(tools, ensure_ascii=False).encode()) if tools else 0)


def step_worst_case_usd(prompt_bound: int, output_cap: int, price: Price) -> float:
    """What one model call can cost at most: the prompt bound at the dearer input price, the output
    cap at the dearer output price (reasoning tokens count toward the cap)."""
    worst = TokenUsage(input=prompt_bound, output=output_cap)
    return cost_usd(worst, Price(max(price.input, price.cached_input), 0.0, max(price.output, price.reasoning), 0.0))


def settle_overshoot_usd(reserved_usd: float, usage: TokenUsage, price: Price) -> float:
    """How far settling ``usage`` goes beyond its reservation (0 when it stays inside)."""
    return max(0.0, cost_usd(usage, price) - reserved_usd)
