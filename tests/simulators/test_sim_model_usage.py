"""Model simulator: deterministic token accounting (pure functions)."""

from __future__ import annotations

import json
import math

from hypothesis import given
from hypothesis import strategies as st

from simulators.model._usage import CACHE_BLOCK, build_usage, cached_tokens, prefix_digests, prompt_tokens

roles = st.sampled_from(["system", "user", "assistant"])
message = st.fixed_dictionaries({"role": roles, "content": st.text(max_size=400)})
conversation = st.lists(message, min_size=1, max_size=8)


def test_prompt_tokens_is_chars_over_four() -> None:
    messages = [{"role": "user", "content": "x" * 101}]
    tools = [{"type": "function", "function": {"name": "t"}}]
    chars = len(json.dumps(messages, separators=(",", ":"))) + len(json.dumps(tools, separators=(",", ":")))
    assert prompt_tokens(messages, tools) == math.ceil(chars / 4)
    assert prompt_tokens(messages, None) < prompt_tokens(messages, tools)


@given(conversation, conversation)
def test_cached_tokens_invariants(earlier: list[dict], later: list[dict]) -> None:
    known = set(prefix_digests(earlier))
    prompt = prompt_tokens(later, None)
    cached = cached_tokens(later, known, prompt)
    assert 0 <= cached <= prompt
    assert cached % CACHE_BLOCK == 0
    if later[0] != earlier[0]:
        assert cached == 0


@given(conversation, st.lists(message, min_size=1, max_size=3))
def test_a_continued_conversation_reuses_its_whole_prefix(first: list[dict], more: list[dict]) -> None:
    known = set(prefix_digests(first))
    prompt = prompt_tokens(first + more, None)
    prefix_tokens = math.ceil(len(json.dumps(first, separators=(",", ":"), ensure_ascii=False)) / 4)
    assert cached_tokens(first + more, known, prompt) == prefix_tokens // CACHE_BLOCK * CACHE_BLOCK


@given(st.integers(0, 10_000), st.integers(0, 10_000), st.integers(0, 64))
def test_usage_totals_add_up(prompt: int, completion: int, reasoning: int) -> None:
    usage = build_usage(prompt, min(prompt, 128), completion + reasoning, reasoning)
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert usage["completion_tokens_details"]["reasoning_tokens"] <= usage["completion_tokens"]
