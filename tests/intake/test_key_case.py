"""GitHub owner and repository names are case-insensitive: ``Acme/API`` and ``acme/api`` are one
repository, so they share the work key, dedupe and the concurrency key (capacity holds)."""

from __future__ import annotations

import pytest

from intake.capacity.plan import CapacityLimits, CapacityPlanner, concurrency_key
from intake.envelope import PullRequestRef, TriggerKind
from intake.identity import review_candidate, review_work_key

UPPER, LOWER = PullRequestRef("Acme", "API", 42), PullRequestRef("acme", "api", 42)


def test_work_keys_ignore_the_case_of_owner_and_repo():
    assert review_work_key("acme", UPPER) == review_work_key("acme", LOWER) == "acme/github:acme/api#42:review"


@pytest.mark.parametrize("template", ["repo:{owner}/{repo}", "{tenant}:repo:{owner}/{repo}", "pr:{owner}/{repo}#{number}",
                                      "Repo:{owner}/{repo}", "{work_key}"])
def test_concurrency_keys_ignore_case(template):
    upper = concurrency_key(template, review_candidate("acme", UPPER, "v1"))
    lower = concurrency_key(template, review_candidate("acme", LOWER, "v1"))
    assert upper == lower
    assert upper == upper.lower()


def test_the_planner_puts_both_spellings_under_one_hold():
    planner = CapacityPlanner(CapacityLimits(concurrency_key="repo:{owner}/{repo}", concurrency_limit=1))
    plans = [planner.plan(review_candidate("acme", ref, "v1"), "github", TriggerKind.EVENT) for ref in (UPPER, LOWER)]
    assert plans[0].concurrency_key == plans[1].concurrency_key == "repo:acme/api"
    assert plans[0].slots == plans[1].slots
