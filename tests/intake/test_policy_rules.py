"""The admission policy's pure rules: repository refusals, what counts as a policy change, and
when a change re-runs done work; its configuration refuses unusable globs."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from intake.envelope import PullRequestRef
from intake.freshness import TargetSnapshot
from intake.identity import review_candidate
from intake.policy import Policy
from sluicegate.config.intake import IntakeConfig

OPEN = TargetSnapshot(exists=True, open=True, current_version="v")


def test_refused_repositories_match_like_scope_globs():
    policy = Policy("v2", ("acme/legacy-*",))
    refused = review_candidate("acme", PullRequestRef("ACME", "Legacy-billing", 1), "v")
    other = review_candidate("acme", PullRequestRef("acme", "api", 1), "v")
    assert policy.evaluate(refused, OPEN) == "policy:repository-refused"
    assert policy.evaluate(other, OPEN) is None
    assert Policy("v2", ("acme*",)).evaluate(other, OPEN) is None  # `*` never crosses the `/`
    assert policy.evaluate(other, TargetSnapshot(exists=True, open=True, draft=True)) == "policy:draft"


@pytest.mark.parametrize(("recorded", "changed"), [("v1", True), ("v2", False), (None, False)])
def test_only_another_known_version_counts_as_a_change(recorded, changed):
    assert Policy("v2").changed_since(recorded) is changed


def test_done_work_reruns_only_when_the_policy_says_so_and_the_version_changed():
    assert Policy("v2", rerun_done_on_change=True).reruns_done("v1")
    assert not Policy("v2", rerun_done_on_change=True).reruns_done("v2")
    assert not Policy("v2", rerun_done_on_change=False).reruns_done("v1")


def test_configuration_builds_the_policy_and_refuses_unusable_globs():
    cfg = IntakeConfig(policy_version="2026-12-01.1", policy_refuse_repositories=["Acme/Old-*"],
                       rerun_done_on_policy_change=True)
    assert cfg.policy() == Policy("2026-12-01.1", ("acme/old-*",), True)
    for bad in (["acme"], ["acme/**"], ["a/b/c"]):
        with pytest.raises(ValidationError):
            IntakeConfig(policy_refuse_repositories=bad)
    with pytest.raises(ValidationError):
        IntakeConfig(policy_version="has space")


def test_an_unreadable_target_refuses_only_on_the_last_attempt_of_a_patched_run():
    from intake.policy import recheck_unreadable

    assert [recheck_unreadable(a, 3) for a in (1, 2, 3)] == [None, None, "policy:recheck-unavailable"]
    assert recheck_unreadable(99, 0) is None  # a run from before patch policy-first-step-fail-closed: retry, never refuse
