"""The task catalogue: discovery from the code on disk, the work-key scheme, names that never move."""

from __future__ import annotations

import pytest

from intake.envelope import PullRequestRef
from intake.identity import parse_work_key
from tasks import registry
from tasks.review import loop as review_loop
from tasks.triage import SPEC as TRIAGE
from workflows import names
from workflows.contracts import WorkOrder, Price, TaskBudget
from workflows.loop_plan import plan_for
from workflows.review_task import SYSTEM_PROMPT, SYSTEM_PROMPT_WITH_READ, TOOLS, TOOLS_WITH_READ


def test_both_tasks_are_discovered_under_their_package_names():
    assert registry.names() == ("review", "triage")
    assert registry.get("triage") is TRIAGE
    with pytest.raises(registry.UnknownTask):
        registry.get("nope")
    with pytest.raises(registry.UnknownTask):
        registry.enabled(["review", "tirage"])


@pytest.mark.parametrize("task", ["review", "triage"])
def test_each_task_builds_the_tenant_prefixed_key_with_its_suffix(task: str):
    spec = registry.get(task)
    version = "ab" * 20 if task == "review" else "2026-11-29T10:00:00Z"
    cand = spec.candidate("acme", PullRequestRef("Acme", "API", 7), version)
    assert cand.work_key == f"acme/github:acme/api#7:{task}" and cand.task == task
    parts = parse_work_key(cand.work_key)
    assert (parts.tenant, parts.task, parts.target.number) == ("acme", task, 7)
    assert registry.for_work_key(cand.work_key) is spec


def test_a_triage_version_must_be_a_timestamp():
    with pytest.raises(ValueError):
        TRIAGE.candidate("acme", PullRequestRef("acme", "api", 7), "ab" * 20)
    assert TRIAGE.candidate("acme", PullRequestRef("acme", "api", 7), "2026-11-29T12:00:00+02:00"
                            ).input_version == "2026-11-29T10:00:00Z"


def test_each_github_event_belongs_to_one_task():
    assert registry.for_github_event("issues").name == "triage"
    assert registry.for_github_event("pull_request").name == "review"
    assert registry.for_github_event("issue_comment") is None  # our own comment can trigger nothing
    assert registry.for_github_event("label") is None


def test_tool_activity_names_are_registered_names():
    assert {t.activity for t in TRIAGE.loop.tools} == {
        names.GET_ISSUE_ACTIVITY, names.ADD_ISSUE_LABELS_ACTIVITY, names.POST_TRIAGE_COMMENT_ACTIVITY}
    assert review_loop.TOOL_ACTIVITIES == {"get_pull_request_diff": names.GET_DIFF_ACTIVITY,
                                           "post_review_comment": names.POST_COMMENT_ACTIVITY,
                                           "read_artifact": names.READ_ARTIFACT_ACTIVITY}
    assert set(TRIAGE.activities()) == {t.activity for t in TRIAGE.loop.tools}  # all hosted
    assert registry.get("review").activities() == {}  # built in (activities/forge_tools.py)


def _order(task: str, version: str) -> WorkOrder:
    return WorkOrder(f"acme/github:acme/api#7:{task}", "acme", "acme", "api", 7, version, 1, "event", "github",
                     "r1", "m", Price(1, 1, 1, 1), TaskBudget(5, 1000, 1.0))


@pytest.mark.parametrize("artifact_reads", [False, True])
def test_a_review_order_gets_exactly_the_prompt_and_tools_it_got_before(artifact_reads: bool):
    plan = plan_for(_order("review", "ab" * 20), artifact_reads)
    assert plan is not None
    assert plan.tools == (TOOLS_WITH_READ if artifact_reads else TOOLS)
    assert plan.messages == [
        {"role": "system", "content": SYSTEM_PROMPT_WITH_READ if artifact_reads else SYSTEM_PROMPT},
        {"role": "user", "content": f"Review pull request acme/api#7 at head commit {'ab' * 20}."}]
    assert ("read_artifact" in plan.activities) is artifact_reads


def test_a_triage_order_gets_the_triage_loop_and_an_unknown_task_none():
    plan = plan_for(_order("triage", "2026-11-29T10:00:00Z"), True)
    assert plan is not None and set(plan.activities) == {"get_issue", "add_labels", "post_triage_comment"}
    assert "untrusted" in plan.messages[0]["content"] and "#7" in plan.messages[1]["content"]
    assert plan_for(_order("nope", "x"), True) is None
