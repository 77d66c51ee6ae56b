"""Retry classes for HTTP statuses (pure)."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from activities.keys import operation_key
from activities.retry_classes import classify_status, parse_retry_after, with_jitter


def test_retry_after_forms():
    now = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after": "Sun, 29 Nov 2026 12:00:30 GMT"}, now) == 30.0
    assert parse_retry_after({"retry-after": "soon"}) is None and parse_retry_after({}) is None


def test_jitter_stays_within_twenty_percent_and_caps():
    rng = random.Random(1)
    values = [with_jitter(10.0, rng) for _ in range(200)]
    assert min(values) >= 10.0 and max(values) <= 12.0 and len(set(values)) > 100
    assert with_jitter(10_000.0, rng) <= 360.0


@pytest.mark.parametrize("status, retryable, kind", [
    (429, True, "ModelRateLimited"), (500, True, "ModelUnavailable"), (503, True, "ModelUnavailable"),
    (408, True, "ModelUnavailable"), (400, False, "ModelRequestRejected"), (401, False, "ModelRequestRejected"),
    (403, False, "ModelRequestRejected"), (404, False, "ModelRequestRejected"), (422, False, "ModelRequestRejected")])
def test_status_classes(status, retryable, kind):
    rc = classify_status(status, {"retry-after": "2"}, "Model")
    assert (rc.retryable, rc.error_type) == (retryable, kind)
    assert (rc.delay_seconds is not None) == (status == 429)


def test_operation_key_ignores_attempts_and_changes_with_version():
    a = operation_key("acme/github:acme/api#1:review", "post_review_comment", "sha1")
    assert a == operation_key("acme/github:acme/api#1:review", "post_review_comment", "sha1")
    assert a != operation_key("acme/github:acme/api#1:review", "post_review_comment", "sha2")
    assert a != operation_key("acme/github:acme/api#1:review", "post_review_comment", "sha1", "second")
