"""Freshness comparison, policy rules and work identity (pure)."""

from __future__ import annotations

from intake.decision import Reason
from intake.envelope import PullRequestRef
from intake.freshness import TargetSnapshot, assess_freshness
from intake.identity import review_candidate, review_work_key, workflow_id_for
from intake.policy import evaluate_policy

OPEN = TargetSnapshot(exists=True, open=True, current_version="new")


def test_fresh_when_versions_match_or_event_has_none():
    assert assess_freshness("new", OPEN) is None
    assert assess_freshness(None, OPEN) is None


def test_stale_closed_missing_are_distinct_reasons():
    assert assess_freshness("old", OPEN) == Reason.STALE_VERSION
    assert assess_freshness("new", TargetSnapshot(exists=True, open=False, current_version="new")) == Reason.TARGET_CLOSED
    assert assess_freshness("new", TargetSnapshot(exists=False)) == Reason.TARGET_NOT_FOUND


def test_work_key_is_case_insensitive_and_stable():
    a = review_work_key("acme", PullRequestRef("Acme", "Api", 7))
    assert a == review_work_key("acme", PullRequestRef("acme", "api", 7)) == "acme/github:acme/api#7:review"
    assert workflow_id_for(a) == "agent/acme/github:acme/api#7:review"


def test_draft_pull_requests_are_refused_by_policy():
    ref = PullRequestRef("acme", "api", 7)
    cand = review_candidate("acme", ref, "new")
    assert evaluate_policy(cand, OPEN) is None
    draft = TargetSnapshot(exists=True, open=True, current_version="new", draft=True)
    assert evaluate_policy(cand, draft) == "policy:draft"
