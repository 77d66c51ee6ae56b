"""The one forge error mapper: every failed forge request becomes a :class:`ForgeError` meaning one thing.

Tools (diff read, comment post, reconcile), intake's freshness read, scans and goals all get
their errors from here, so a given answer from GitHub is retried (or not), and waited for, the
same way on every path. Classes, from GitHub's REST docs ("Rate limits for the REST API"):

* **rate limited** (``ForgeRateLimited``, retryable) — a 429, or a 403 that is a primary or
  secondary rate limit: it carries ``retry-after``, or ``x-ratelimit-remaining: 0``, or a
  message naming a rate limit. The wait is the server's: ``retry-after`` seconds; else until
  ``x-ratelimit-reset``; else one minute ("wait for at least one minute"). A refused request
  was not applied, so a rate-limited *write* is never ambiguous and may simply be repeated.
* **unavailable** (``ForgeUnavailable``, retryable) — 5xx, 408, timeouts, dropped connections.
  ``retry-after`` is honoured when present, otherwise the caller's backoff applies. On a write
  these are *ambiguous* (the forge may have committed): callers reconcile before repeating.
* **rejected** (``ForgeRequestRejected``, not retryable) — every other 4xx: bad credentials, a
  403 that is a permission refusal, 404, 422. Trying again cannot help and can get a token banned.

Every delay is capped (``MAX_FORGE_DELAY``: GitHub's primary window is an hour) and jittered
(``sluicegate.forge.retry_after``), so workers sharing a token do not return in lockstep.
Pure: no HTTP client, Temporal or database import; adapters map a :class:`ForgeError` onward.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Mapping

from sluicegate.errors import SluicegateError
from sluicegate.forge.retry_after import header, parse_retry_after, rate_limit_exhausted, rate_limit_reset_delay, \
    with_jitter

RATE_LIMITED = "RateLimited"
UNAVAILABLE = "Unavailable"
REJECTED = "RequestRejected"
MAX_FORGE_DELAY = 3600.0
"""GitHub's primary rate limit window is one hour: no forge delay is honoured beyond it."""
SECONDARY_LIMIT_DEFAULT_DELAY = 60.0
"""GitHub: a secondary limit without retry-after or reset headers means "wait at least one minute"."""
_RATE_LIMIT_WORDS = ("rate limit", "abuse detection")


@dataclass
class ForgeError(SluicegateError):
    """A forge request failed; ``retryable`` tells whether trying again can help."""

    message: str
    status: int | None
    retryable: bool
    retry_after: float | None = None
    """Seconds to wait before trying again (the server's wish, capped and jittered); None: caller's backoff."""
    ambiguous: bool = False
    """True when the request may have been applied (timeout, dropped connection, 5xx on a write)."""
    rate_limited: bool = False
    """The forge refused the request for a primary or secondary rate limit (never applied)."""

    def __str__(self) -> str:
        return f"forge error ({self.status or 'no status'}): {self.message}"

    @property
    def kind(self) -> str:
        """``RateLimited`` | ``Unavailable`` | ``RequestRejected``: the suffix of every error type built from it."""
        if self.rate_limited:
            return RATE_LIMITED
        return UNAVAILABLE if self.retryable else REJECTED

    @property
    def not_found(self) -> bool:
        return self.status == 404


def is_rate_limit(status: int, headers: Mapping[str, str] | None, message: str) -> bool:
    """GitHub's primary or secondary rate limit: 429, or a 403 with its headers or its words."""
    if status == 429:
        return True
    if status != 403:
        return False
    text = message.lower()
    return (header(headers, "retry-after") is not None or rate_limit_exhausted(headers)
            or any(word in text for word in _RATE_LIMIT_WORDS))


def rate_limit_delay(headers: Mapping[str, str] | None, now: datetime | None = None) -> float:
    """How long GitHub asks a rate-limited client to wait, before capping and jitter."""
    after = parse_retry_after(headers, now)
    if after is not None:
        return after
    reset = rate_limit_reset_delay(headers, now)
    if reset is not None:
        return max(reset, 1.0)
    return SECONDARY_LIMIT_DEFAULT_DELAY


def _jittered(seconds: float | None) -> float | None:
    return None if seconds is None else with_jitter(seconds, cap=MAX_FORGE_DELAY)


def from_response(status: int, headers: Mapping[str, str] | None, message: str, *, write: bool = False,
                  now: datetime | None = None) -> ForgeError:
    """The error for an HTTP answer ``status`` (anything but 2xx) to a forge request."""
    message = message or f"HTTP {status}"
    if is_rate_limit(status, headers, message):
        return ForgeError(message, status, True, _jittered(rate_limit_delay(headers, now)), rate_limited=True)
    if status >= 500 or status == 408:
        return ForgeError(message, status, True, _jittered(parse_retry_after(headers, now)), ambiguous=write)
    return ForgeError(message, status, False)


def from_transport(problem: str, *, write: bool = False) -> ForgeError:
    """The error for a request that got no answer (timeout, refused or dropped connection)."""
    return ForgeError(problem, None, True, None, ambiguous=write)
