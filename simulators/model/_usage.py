"""Deterministic token accounting for the model simulator (pure functions).

Nothing here tokenises for real; the numbers are simple, reproducible
functions of the request so tests and budgets can reason about them:

* ``prompt_tokens = ceil((len(json(messages)) + len(json(tools))) / 4)``
  where ``json`` is canonical (sorted keys, no spaces); ``tools`` count 0
  when absent.
* ``cached_tokens``: the longest prefix of the message list (1..all
  messages) that an earlier *completed* request -- any conversation -- also
  sent, measured as ``ceil(len(json(prefix)) / 4)``, rounded down to a
  multiple of 64 and capped at ``prompt_tokens``. Prefixes are identified
  by chained SHA-256 digests, so equal prefixes match exactly.
* ``reasoning_tokens``: 48 for a tool-call step, 16 for a final answer.
* ``completion_tokens = ceil(len(json(assistant message)) / 4) + reasoning``.
* ``total_tokens = prompt_tokens + completion_tokens``.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Container, Sequence
from typing import Any

__all__ = [
    "CACHE_BLOCK",
    "REASONING_FINAL",
    "REASONING_TOOL_STEP",
    "build_usage",
    "cached_tokens",
    "canonical_json",
    "completion_tokens",
    "prefix_digests",
    "prompt_tokens",
    "tokens_for",
]

CACHE_BLOCK = 64
REASONING_TOOL_STEP = 48
REASONING_FINAL = 16


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def tokens_for(text: str) -> int:
    return math.ceil(len(text) / 4)


def prompt_tokens(messages: Sequence[Any], tools: Sequence[Any] | None) -> int:
    chars = len(canonical_json(list(messages)))
    if tools:
        chars += len(canonical_json(list(tools)))
    return math.ceil(chars / 4)


def prefix_digests(messages: Sequence[Any]) -> list[str]:
    """``digests[k-1]`` identifies ``messages[:k]``."""
    digests: list[str] = []
    previous = ""
    for message in messages:
        previous = hashlib.sha256((previous + canonical_json(message)).encode()).hexdigest()
        digests.append(previous)
    return digests


def cached_tokens(messages: Sequence[Any], known: Container[str], prompt: int) -> int:
    digests = prefix_digests(messages)
    for length in range(len(messages), 0, -1):
        if digests[length - 1] in known:
            prefix = tokens_for(canonical_json(list(messages[:length])))
            return min(prefix // CACHE_BLOCK * CACHE_BLOCK, prompt)
    return 0


def completion_tokens(message: Any, reasoning: int) -> int:
    return tokens_for(canonical_json(message)) + reasoning


def build_usage(prompt: int, cached: int, completion: int, reasoning: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": reasoning,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }
