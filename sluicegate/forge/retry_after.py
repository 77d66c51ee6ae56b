"""When to call an outside system again: the one Retry-After parser and the one jitter.

Every HTTP caller (the model endpoint through ``activities.retry_classes``, the forge through
``sluicegate.forge.errors``) reads the server's wish from here, so a header is understood the
same way whichever path met it.

Failure modes this is written against:

* A malformed, negative or absent header is ignored (``None``), never an exception: a broken
  proxy must not turn a retryable answer into a crash.
* An HTTP date or a reset time already in the past yields 0 (try again now), not a negative delay.
* A huge value is capped by the caller's bound, so one bad answer cannot park a retry for a day.
* Jitter only ever adds (up to 20 %), so a fleet of workers spreads out *after* the time the
  server asked for, never before it.

Pure functions; headers are any mapping (httpx's are case-insensitive, a dict may not be).
"""

from __future__ import annotations

import random
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Mapping

MAX_HONOURED_RETRY_AFTER = 300.0
"""Default cap on an honoured delay (model endpoints)."""
JITTER_FRACTION = 0.2


def header(headers: Mapping[str, str] | None, name: str) -> str | None:
    """``headers[name]`` looked up case-insensitively (``name`` in lower case)."""
    if headers is None:
        return None
    value = headers.get(name)
    if value is not None:
        return value
    for key, found in headers.items():
        if key.lower() == name:
            return found
    return None


def parse_retry_after(headers: Mapping[str, str] | None, now: datetime | None = None) -> float | None:
    """Seconds to wait according to ``retry-after-ms`` or ``retry-after`` (seconds or HTTP date)."""
    ms = header(headers, "retry-after-ms")
    if ms is not None:
        try:
            return max(float(ms) / 1000.0, 0.0)
        except ValueError:
            pass
    value = header(headers, "retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - (now or datetime.now(UTC))).total_seconds(), 0.0)


def rate_limit_exhausted(headers: Mapping[str, str] | None) -> bool:
    """GitHub's ``x-ratelimit-remaining: 0``: the primary limit (or the secondary one) is used up."""
    return (header(headers, "x-ratelimit-remaining") or "").strip() == "0"


def rate_limit_reset_delay(headers: Mapping[str, str] | None, now: datetime | None = None) -> float | None:
    """Seconds until ``x-ratelimit-reset`` (UTC epoch seconds) when ``x-ratelimit-remaining`` is 0."""
    if not rate_limit_exhausted(headers):
        return None
    try:
        reset = float(header(headers, "x-ratelimit-reset") or "")
    except ValueError:
        return None
    return max(reset - (now or datetime.now(UTC)).timestamp(), 0.0)


def with_jitter(seconds: float, rng: random.Random | None = None, cap: float = MAX_HONOURED_RETRY_AFTER,
                fraction: float = JITTER_FRACTION) -> float:
    """``seconds`` capped at ``cap``, plus up to ``fraction`` (20 %) random extra: the one jitter
    (the capacity gate's deferred items use it too, through ``intake.capacity.jittered``)."""
    base = min(max(seconds, 0.0), cap)
    return base + base * fraction * (rng or random).random()


def exponential_backoff(attempt: int, base: float, cap: float, floor: float | None = None,
                        rng: random.Random | None = None) -> float:
    """The wait before re-trying something that failed ``attempt`` times: ``base * 2**attempt``
    capped at ``cap``, plus :func:`with_jitter`'s extra — but never less than ``floor``, the
    server's own wish, which is honoured as given even past ``cap`` (the caller's error mapper has
    already bounded and jittered it: a rate limit that resets in ten minutes is not re-tried in five)."""
    delay = with_jitter(base * 2.0 ** min(max(attempt, 0), 32), rng, cap=cap)
    return delay if floor is None else max(delay, floor)
