"""In-memory state of the model simulator: counters, faults, prompt cache.

All mutation happens under one ``threading.Lock``. Accounting is split in
two so that observers never race a slow request:

* ``record_arrival`` (at arrival, before auth/faults/validation) counts
  ``calls`` and ``by_work["<work key>@<input version>"]``;
* ``record_outcome`` (when the answer is ready) counts ``by_status``,
  ``completed`` (status 200) and the token totals.

The prompt cache is the set of message-prefix digests of completed
requests (see ``_usage``); ``lookup_and_remember`` computes a request's
``cached_tokens`` and then remembers its prefixes, atomically. Faulted or
rejected requests never warm the cache.

``reset()`` zeroes counters, clears faults and the prompt cache; the
request sequence (used for response ids) keeps increasing so ids stay
unique for the life of the process.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any

from simulators._faults import FaultDelays, FaultList
from simulators.model._usage import cached_tokens, prefix_digests

__all__ = ["ModelState"]

DEFAULT_MODELS = ("sim-reviewer-1",)


class ModelState:
    """Thread-safe state for the model simulator."""

    def __init__(self, models: Sequence[str] = DEFAULT_MODELS) -> None:
        if not models:
            raise ValueError("at least one model name is required")
        self.models = tuple(models)
        self.faults = FaultList()
        self._lock = threading.Lock()
        self.delays = FaultDelays()
        self._seq = 0
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self._calls = 0
            self._completed = 0
            self._by_status: Counter[str] = Counter()
            self._by_work: Counter[str] = Counter()
            self._keys_by_work: dict[str, Counter[str]] = {}
            self._tokens: Counter[str] = Counter()
            self._known_prefixes: set[str] = set()
            self.faults.clear()

    def next_seq(self) -> int:
        with self._lock:
            self._seq += 1
            return self._seq

    def record_arrival(self, work: str) -> None:
        with self._lock:
            self._calls += 1
            self._by_work[work] += 1

    def record_key(self, work_key: str, owner: str) -> None:
        """Whose key (a tenant, ``default`` or ``unknown``) a request for ``work_key`` carried."""
        with self._lock:
            self._keys_by_work.setdefault(work_key, Counter())[owner] += 1

    def record_outcome(self, status: int, usage: dict[str, Any] | None = None) -> None:
        with self._lock:
            self._by_status[str(status)] += 1
            if status == 200:
                self._completed += 1
            if usage:
                self._tokens["prompt_tokens"] += usage["prompt_tokens"]
                self._tokens["completion_tokens"] += usage["completion_tokens"]
                self._tokens["cached_tokens"] += usage["prompt_tokens_details"]["cached_tokens"]
                self._tokens["reasoning_tokens"] += usage["completion_tokens_details"]["reasoning_tokens"]

    def lookup_and_remember(self, messages: Sequence[Any], prompt: int) -> int:
        """``cached_tokens`` for ``messages``; then remember their prefixes."""
        digests = prefix_digests(messages)
        with self._lock:
            cached = cached_tokens(messages, self._known_prefixes, prompt)
            self._known_prefixes.update(digests)
            return cached

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {
                "calls": self._calls,
                "completed": self._completed,
                "by_status": dict(sorted(self._by_status.items())),
                "by_work": dict(sorted(self._by_work.items())),
                "keys_by_work": {w: dict(sorted(c.items())) for w, c in sorted(self._keys_by_work.items())},
                "tokens": {
                    k: self._tokens[k]
                    for k in ("prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens")
                },
            }
