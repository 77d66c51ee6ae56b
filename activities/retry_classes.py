"""Retry classes for calls to outside systems, in one place.

* 429 — honour ``retry-after-ms`` / ``Retry-After`` (seconds or HTTP date), plus jitter
  so a fleet of workers does not come back in lockstep.
* 408, 409, 5xx and connection errors — retried with Temporal's exponential backoff,
  bounded by the activity's maximum attempts.
* Any other 4xx (400, 401, 403, 404, 422, ...) — never retried: trying again only adds
  log noise and can get an account locked.

Pure functions; the activities turn a :class:`RetryClass` into an ``ApplicationError``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Mapping

MAX_HONOURED_RETRY_AFTER = 300.0
JITTER_FRACTION = 0.2


@dataclass(frozen=True)
class RetryClass:
    retryable: bool
    error_type: str
    """The ``ApplicationError.type`` workflows match on."""
    delay_seconds: float | None = None
    """Explicit next delay (from Retry-After), else Temporal's backoff applies."""


def parse_retry_after(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """Seconds to wait according to ``retry-after-ms`` or ``retry-after``; None if absent or bad."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(float(ms) / 1000.0, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    now = now or datetime.now(UTC)
    return max((when - now).total_seconds(), 0.0)


def with_jitter(seconds: float, rng: random.Random | None = None) -> float:
    """``seconds`` capped at MAX_HONOURED_RETRY_AFTER, plus up to 20% random extra."""
    base = min(seconds, MAX_HONOURED_RETRY_AFTER)
    return base + base * JITTER_FRACTION * (rng or random).random()


def classify_status(status: int, headers: Mapping[str, str], prefix: str) -> RetryClass:
    """Map an HTTP status from ``prefix`` (e.g. "Model") to its retry class."""
    if status == 429:
        after = parse_retry_after(headers)
        return RetryClass(True, f"{prefix}RateLimited", with_jitter(after) if after is not None else None)
    if status in (408, 409) or status >= 500:
        return RetryClass(True, f"{prefix}Unavailable")
    return RetryClass(False, f"{prefix}RequestRejected")
