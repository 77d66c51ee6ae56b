"""Event age: the pure half of freshness that needs no forge read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from intake.sources.age import event_age_seconds, too_old

NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)


def test_older_than_the_bound_is_too_old_and_the_bound_itself_is_not():
    assert too_old(NOW - timedelta(seconds=3601), NOW, 3600)
    assert not too_old(NOW - timedelta(seconds=3600), NOW, 3600)


def test_unknown_time_or_no_bound_is_never_too_old():
    assert not too_old(None, NOW, 60)
    assert not too_old(NOW - timedelta(days=365), NOW, None)


def test_future_events_have_no_age_and_naive_times_are_utc():
    assert event_age_seconds(NOW + timedelta(hours=1), NOW) == 0
    assert too_old(datetime(2026, 11, 29, 10), NOW, 3600)  # noqa: DTZ001 - the naive time is the case under test
