"""Pure parts of "verified means durable": the backoff, the freshness read's deadline, the
``intake:`` settings, which answers are 202/503, and which of two queued events is newer."""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from intake.capacity.payload import emitted_later
from intake.decision import IntakeDecision, Outcome, Reason
from intake.envelope import PullRequestRef
from intake.freshness import TargetSnapshot
from intake.identity import review_candidate
from intake.ports import SourceUnavailable
from intake.unread import Unread, UnreadPolicy, read_within
from sluicegate.config.intake import IntakeConfig
from sluicegate.forge.retry_after import JITTER_FRACTION, exponential_backoff
from webhook_api._responses import decision_response, ledger_down_response

CANDIDATE = review_candidate("acme", PullRequestRef("acme", "api", 7), "a" * 40)


def test_backoff_doubles_is_capped_and_jittered_upwards_only():
    rng = random.Random(7)
    for attempt, bare in ((0, 15), (1, 30), (2, 60), (4, 240), (5, 300), (40, 300)):
        for _ in range(20):
            wait = exponential_backoff(attempt, 15, 300, rng=rng)
            assert bare <= wait <= bare * (1 + JITTER_FRACTION)


def test_the_servers_wish_is_a_floor_honoured_even_past_the_cap():
    assert exponential_backoff(0, 15, 300, floor=600.0, rng=random.Random(1)) == 600.0
    assert 15 <= exponential_backoff(0, 15, 300, floor=9.0, rng=random.Random(1)) <= 18
    assert UnreadPolicy(retry_seconds=1, max_seconds=4).wait(3, None) <= 4 * (1 + JITTER_FRACTION)


class _Reader:
    def __init__(self, delay: float = 0.0, error: Exception | None = None) -> None:
        self.delay, self.error = delay, error

    async def read(self, ref, tenant=None) -> TargetSnapshot:
        await asyncio.sleep(self.delay)
        if self.error is not None:
            raise self.error
        return TargetSnapshot(exists=True, open=True, current_version="a" * 40)


async def test_the_freshness_read_has_its_own_deadline():
    slow = await read_within(_Reader(delay=5), CANDIDATE, 0.05)
    assert isinstance(slow, Unread) and slow.reason == Reason.FRESHNESS_DEADLINE and slow.retry_after is None
    failed = await read_within(_Reader(error=SourceUnavailable("forge error (503)", 7.0)), CANDIDATE, 1)
    assert (failed.reason, failed.retry_after) == (Reason.SOURCE_UNAVAILABLE, 7.0) and "503" in failed.message
    broken = await read_within(_Reader(error=ConnectionResetError("peer reset")), CANDIDATE, 1)
    assert broken.reason == Reason.SOURCE_UNAVAILABLE and "ConnectionResetError" in broken.message
    fresh = await read_within(_Reader(), CANDIDATE, 1)
    assert fresh == TargetSnapshot(exists=True, open=True, current_version="a" * 40)


@pytest.mark.parametrize("bad", [{"freshness_deadline_seconds": 0}, {"freshness_deadline_seconds": 10},
                                 {"source_retry_seconds": 0},
                                 {"source_retry_seconds": 60, "source_retry_max_seconds": 30}])
def test_intake_settings_are_validated(bad):
    with pytest.raises(ValidationError):
        IntakeConfig(**bad)
    assert IntakeConfig().freshness_deadline_seconds == 4.0


@pytest.mark.parametrize("outcome", list(Outcome))
@pytest.mark.parametrize("reason", [*Reason, "policy:draft"])
def test_no_decision_is_ever_answered_503_and_every_defer_is_queued(outcome, reason):
    response = decision_response(IntakeDecision(outcome, str(reason), "m", "r", retry_after_seconds=3.2))
    assert response.status_code != 503
    if outcome == Outcome.DEFER and reason != Reason.OUT_OF_SCOPE:  # out-of-scope is 403 whatever its outcome
        assert response.status_code == 202 and b'"queued":true' in response.body
        assert response.headers["retry-after"] == "3"
    assert ledger_down_response().status_code == 503


def test_a_late_older_event_does_not_replace_a_newer_queued_one():
    t = datetime.now(UTC)

    def payload(when):
        return {"envelope": {"time": when.isoformat() if when else None}, "candidate": {}}

    assert emitted_later(payload(t), payload(t - timedelta(seconds=1)))
    assert not emitted_later(payload(t), payload(t + timedelta(seconds=1)))
    assert not emitted_later(payload(t), payload(t)) and not emitted_later(payload(None), payload(t))
    assert not emitted_later({}, payload(t))  # an item queued without a readable payload is replaced
