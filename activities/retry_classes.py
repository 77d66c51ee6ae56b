"""Retry classes for calls to the model endpoint, in one place.

* 429 — honour ``retry-after-ms`` / ``Retry-After`` (seconds or HTTP date), plus jitter
  so a fleet of workers does not come back in lockstep.
* 408, 409, 5xx and connection errors — retried with Temporal's exponential backoff,
  bounded by the activity's maximum attempts.
* Any other 4xx (400, 401, 403, 404, 422, ...) — never retried: trying again only adds
  log noise and can get an account locked.

The header parser and the jitter are ``sluicegate.forge.retry_after``'s, shared with the forge's
error mapper (``sluicegate.forge.errors``). Pure functions; the activities turn a
:class:`RetryClass` into an ``ApplicationError``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from sluicegate.forge.retry_after import MAX_HONOURED_RETRY_AFTER, parse_retry_after, with_jitter
from workflows.kinds import FailureType

__all__ = ["MAX_HONOURED_RETRY_AFTER", "RetryClass", "classify_status", "parse_retry_after", "with_jitter"]


@dataclass(frozen=True)
class RetryClass:
    retryable: bool
    error_type: str
    """The ``ApplicationError.type`` workflows match on."""
    delay_seconds: float | None = None
    """Explicit next delay (from Retry-After), else Temporal's backoff applies."""


def classify_status(status: int, headers: Mapping[str, str], prefix: str) -> RetryClass:
    """Map an HTTP status from ``prefix`` (e.g. "Model") to its retry class."""
    if status == 429:
        after = parse_retry_after(headers)
        return RetryClass(True, FailureType.of(prefix, "RateLimited"), with_jitter(after) if after is not None else None)
    if status in (408, 409) or status >= 500:
        return RetryClass(True, FailureType.of(prefix, "Unavailable"))
    return RetryClass(False, FailureType.of(prefix, "RequestRejected"))
