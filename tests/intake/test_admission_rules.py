"""The pure refusal rules the ledger and the HTTP layer apply (intake/admission_rules.py, request_rules.py)."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from intake.actors import TenantChoice
from intake.admission_rules import (
    already_queued, capacity_deferral, capacity_reason, deferral_delay, readmission_refusal, repeat_reason,
)
from intake.capacity import Block
from intake.decision import Outcome, Reason
from intake.envelope import TriggerKind
from intake.receipts import ReceiptDraft
from intake.request_rules import actor_rule, force_rule, replay_rule, source_rule, tenant_rule

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def _draft(**kw) -> ReceiptDraft:
    return ReceiptDraft(Outcome.ACCEPT, Reason.ADMITTED, "fresh", TriggerKind.EVENT, "github", NOW,
                        delivery_id="d-1", work_key="acme/github:acme/api#1:review", input_version="abc", **kw)


@pytest.mark.parametrize("block, reason", [(Block.GLOBAL, Reason.CAPACITY), (Block.KEY, Reason.CAPACITY),
                                           (Block.QUOTA, Reason.QUOTA), (Block.RATE, Reason.RATE_LIMITED),
                                           (Block.BREAKER, Reason.BREAKER_OPEN), (Block.SOURCE, Reason.SOURCE_UNAVAILABLE)])
def test_a_capacity_block_defers_with_its_reason(block: Block, reason: Reason):
    assert capacity_reason(block) == reason
    deferred = capacity_deferral(_draft(), block, "no slot", 12.0)
    assert (deferred.outcome, deferred.reason, deferred.retry_after_seconds) == (Outcome.DEFER, reason, 12.0)


def test_every_block_has_a_reason():
    assert {capacity_reason(b) for b in Block} <= set(Reason)


def test_a_quota_waits_exactly_others_are_jittered_upwards():
    assert deferral_delay(Block.QUOTA, 3600.0, 30.0) == 3600.0
    waits = {deferral_delay(Block.GLOBAL, None, 30.0, random.Random(i)) for i in range(20)}
    assert all(30.0 <= w <= 36.0 for w in waits) and len(waits) > 1


def test_the_same_version_queued_as_another_item_is_duplicate_work():
    assert already_queued(_draft(), "item-1", "abc", None).reason == Reason.DUPLICATE_WORK
    assert already_queued(_draft(), "item-1", "abc", "item-1") is None  # the item being resumed
    assert already_queued(_draft(), "item-1", "older", None) is None
    assert already_queued(_draft(), None, None, None) is None


def test_readmissions_are_refused_at_the_limit():
    assert readmission_refusal(_draft(), 2, 3) is None
    refused = readmission_refusal(_draft(), 3, 3)
    assert (refused.outcome, refused.reason) == (Outcome.REJECT, Reason.READMISSION_LIMIT)


def test_a_repeat_is_told_by_id_or_by_body():
    assert repeat_reason(_draft(), same_body=False)[0] == Reason.DUPLICATE_DELIVERY
    reason, message = repeat_reason(_draft(body_digest="f" * 64), same_body=True)
    assert reason == Reason.REPLAYED_BODY and "ffffffffffffffff" in message


def test_request_rules():
    assert source_rule(True) is None and source_rule(False).reason == Reason.UNKNOWN_SOURCE
    assert actor_rule("ops") is None and actor_rule(None).http_status == 401
    assert tenant_rule(TenantChoice("acme", "operator"), "r", "manual") is None
    assert tenant_rule(TenantChoice(None, refusal="no role"), "r", "manual").reason == Reason.OUT_OF_SCOPE
    assert tenant_rule(TenantChoice(None, ambiguous=True, refusal="name one"), "r", "manual").http_status == 422
    assert force_rule(False, "viewer", "ops", "acme", "r", "manual") is None
    assert force_rule(True, "admin", "ops", "acme", "r", "manual") is None
    assert force_rule(True, "operator", "ops", "acme", "r", "manual").reason == "policy:override-not-permitted"
    assert replay_rule("admin", "ops", "acme", "d", "replay") is None
    assert replay_rule("operator", "ops", "acme", "d", "replay").reason == "policy:replay-not-permitted"


# -- the event's moment against its receipt (intake.admission_rules.future_refusal, lag_refusal) --------

def _issue_event(time: datetime | None, received_at: datetime = NOW):
    from intake.envelope import Envelope, PullRequestRef
    from tasks.triage.target import triage_candidate

    env = Envelope(id="d-1", source="github", type="issues.opened", subject="acme/api#7", time=time,
                   received_at=received_at, trigger_kind=TriggerKind.EVENT, tenant="acme")
    return env, triage_candidate("acme", PullRequestRef("acme", "api", 7), "2026-12-01T00:00:00Z")


@pytest.mark.parametrize("ahead, refused", [(0, False), (300, False), (301, True), (86_400 * 365, True)])
def test_an_event_further_ahead_of_its_receipt_than_the_skew_is_future_event(ahead: int, refused: bool):
    from datetime import timedelta

    from intake.admission_rules import future_refusal

    env, cand = _issue_event(NOW + timedelta(seconds=ahead))
    draft = future_refusal(env, cand, 300.0)
    assert (draft is not None) == refused
    if draft is not None:
        assert (draft.outcome, draft.reason) == (Outcome.REJECT, Reason.FUTURE_EVENT)
        assert f"{ahead}s after its receipt" in draft.message


def test_year_9999_is_refused_and_no_moment_or_no_bound_never_is():
    from intake.admission_rules import future_refusal

    env, cand = _issue_event(datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC))
    assert future_refusal(env, cand, 300.0).reason == Reason.FUTURE_EVENT
    assert future_refusal(env, cand, None) is None
    assert future_refusal(*_issue_event(None), 300.0) is None  # no event time (ping, a manual trigger)
    past, cand = _issue_event(datetime(2020, 1, 1, tzinfo=UTC))  # old is the age rule's business, not this one's
    assert future_refusal(past, cand, 300.0) is None


@pytest.mark.parametrize("waited, refused", [(0, False), (900, False), (901, True)])
def test_a_source_lagging_longer_than_the_limit_after_receipt_is_source_lag_limit(waited: int, refused: bool):
    from datetime import timedelta

    from intake.admission_rules import lag_refusal

    env, cand = _issue_event(NOW)
    draft = lag_refusal(env, cand, NOW + timedelta(seconds=waited), 900.0)
    assert (draft is not None) == refused
    if draft is not None:
        assert (draft.outcome, draft.reason) == (Outcome.REJECT, Reason.SOURCE_LAG_LIMIT)
        assert cand.input_version in draft.message
    assert lag_refusal(env, cand, NOW + timedelta(days=30), None) is None
