"""The one forge error mapper (pure): GitHub's answers -> what a caller does and how long it waits."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from sluicegate.forge.errors import MAX_FORGE_DELAY, SECONDARY_LIMIT_DEFAULT_DELAY, from_response, from_transport
from sluicegate.forge.retry_after import JITTER_FRACTION

NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
SECONDARY = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
PRIMARY = "API rate limit exceeded for user ID 1."


def _within_jitter(value: float | None, base: float) -> bool:
    return value is not None and base <= value <= base * (1 + JITTER_FRACTION)


@pytest.mark.parametrize("status", [403, 429])
def test_primary_limit_waits_until_the_reset(status: int) -> None:
    headers = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW.timestamp()) + 120)}
    err = from_response(status, headers, PRIMARY, write=True, now=NOW)
    assert (err.retryable, err.rate_limited, err.ambiguous, err.kind) == (True, True, False, "RateLimited")
    assert _within_jitter(err.retry_after, 120)


@pytest.mark.parametrize("status", [403, 429])
def test_secondary_limit_honours_retry_after_over_the_reset(status: int) -> None:
    headers = {"retry-after": "7", "x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW.timestamp()) + 900)}
    err = from_response(status, headers, SECONDARY, write=True, now=NOW)
    assert err.rate_limited and not err.ambiguous and _within_jitter(err.retry_after, 7)


@pytest.mark.parametrize("status", [403, 429])
def test_secondary_limit_without_headers_waits_a_minute(status: int) -> None:
    err = from_response(status, {"x-ratelimit-remaining": "4000"}, SECONDARY, now=NOW)
    assert err.rate_limited and _within_jitter(err.retry_after, SECONDARY_LIMIT_DEFAULT_DELAY)


def test_a_reset_in_the_past_retries_soon_and_a_far_one_is_capped() -> None:
    past = from_response(403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1"}, PRIMARY, now=NOW)
    assert past.rate_limited and _within_jitter(past.retry_after, 1.0)
    far = from_response(429, {"retry-after": "86400"}, SECONDARY, now=NOW)
    assert _within_jitter(far.retry_after, MAX_FORGE_DELAY)


@pytest.mark.parametrize("status, message", [
    (403, "Resource not accessible by integration"), (401, "Bad credentials"), (404, "Not Found"),
    (422, "Validation Failed")])
def test_other_client_errors_are_rejected(status: int, message: str) -> None:
    err = from_response(status, {"x-ratelimit-remaining": "4999"}, message, write=True, now=NOW)
    assert (err.retryable, err.rate_limited, err.retry_after, err.kind) == (False, False, None, "RequestRejected")
    assert err.not_found == (status == 404)


def test_server_errors_retry_and_are_ambiguous_only_on_writes() -> None:
    read = from_response(502, {}, "Bad Gateway", now=NOW)
    write = from_response(503, {"Retry-After": "5"}, "Service Unavailable", write=True, now=NOW)
    assert (read.retryable, read.ambiguous, read.retry_after, read.kind) == (True, False, None, "Unavailable")
    assert write.ambiguous and _within_jitter(write.retry_after, 5)
    timeout = from_transport("timed out", write=True)
    assert (timeout.retryable, timeout.ambiguous, timeout.status) == (True, True, None)


def test_malformed_headers_are_ignored_not_raised() -> None:
    err = from_response(429, {"retry-after": "soon", "x-ratelimit-remaining": "0", "x-ratelimit-reset": "x"}, "",
                        now=NOW)
    assert err.rate_limited and _within_jitter(err.retry_after, SECONDARY_LIMIT_DEFAULT_DELAY)
