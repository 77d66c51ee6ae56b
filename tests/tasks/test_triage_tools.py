"""The triage tools as the worker hosts them (``activities/task_tools.py``), in Temporal's
``ActivityEnvironment``, against the forge simulator over HTTP and the side-effect ledger in SQL
(both backends).

* ``get_issue``: the issue, bounded; the body is data for the model, never trusted.
* ``add_labels``: only labels in ``tasks.triage.labels``; applied once across a retry and across a
  crash after the forge applied them (reconciled by reading the labels back, no second write).
* ``post_triage_comment``: one comment per (work key, version) across a retry and a crash-reconcile.
* every tool refuses while a kill is in force, before the forge is touched.
"""

from __future__ import annotations

import json
import uuid

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.gateway import ToolGateway
from activities.markers import CommentMarks
from activities.task_tools import TaskTools
from ledger import KillSwitch, SideEffectLedger
from sluicegate.config.tasks import TasksConfig
from sluicegate.forge.client import ForgeClient
from tasks import registry
from tasks.triage import ADD_LABELS_ACTIVITY, GET_ISSUE_ACTIVITY, POST_TRIAGE_COMMENT_ACTIVITY
from tasks.triage.tools import MAX_BODY_CHARS
from tests.support.sims import FORGE_TOKEN
from workflows.contracts import ToolRequest

BOT = CommentMarks.from_values("marker-secret", (), "sluicegate-bot")
"""The forge simulator's static token acts as the bot user ``sluicegate-bot``."""


@pytest.fixture
async def tools(engine, sims):
    client = ForgeClient(sims.forge.base_url, FORGE_TOKEN, timeout_seconds=5)
    kills = KillSwitch(engine)
    options = TasksConfig().triage
    host = TaskTools([registry.get("triage")], lambda spec: options, client,
                     ToolGateway(SideEffectLedger(engine), kills), BOT)
    acts = {a.__temporal_activity_definition.name: a for a in host.activities()}
    yield acts, kills
    await client.aclose()


def target(sims, **fields) -> tuple[str, str]:
    name = f"i{uuid.uuid4().hex[:8]}"
    sims.forge_ctl("POST", f"/issues/acme/{name}/5", json={"title": "App crashes", "body": "Traceback ...",
                                                            "updated_at": "2026-11-29T10:00:00Z", **fields})
    return name, f"acme/github:acme/{name}#5:triage"


def request(name: str, key: str, arguments: dict, call: str = "call-1") -> ToolRequest:
    return ToolRequest(key, "acme", "acme", name, 5, "2026-11-29T10:00:00Z", 1, call, json.dumps(arguments))


def stored(sims, name: str) -> dict:
    return sims.forge_ctl("GET", f"/issues/acme/{name}/5").json()


def stats(sims) -> dict:
    return sims.forge_ctl("GET", "/stats").json()


async def test_get_issue_answers_the_issue_bounded_with_the_allowed_labels(sims, tools):
    acts, _ = tools
    name, key = target(sims, body="x" * (MAX_BODY_CHARS + 500) + "\x00", labels=["triaged"])
    result = await ActivityEnvironment().run(acts[GET_ISSUE_ACTIVITY], request(name, key, {}))
    seen = json.loads(result.content)
    assert seen["title"] == "App crashes" and seen["state"] == "open" and seen["labels"] == ["triaged"]
    assert len(seen["body"]) < MAX_BODY_CHARS + 50 and seen["body"].endswith("[... truncated]")
    assert seen["allowed_labels"] == ["bug", "enhancement", "question", "documentation"]


async def test_add_labels_applies_only_allowed_labels_once_across_a_retry(sims, tools):
    acts, _ = tools
    name, key = target(sims)
    asked = {"labels": ["BUG", "security", "question", "bug"]}  # injection asks for one nobody allowed
    first = await ActivityEnvironment().run(acts[ADD_LABELS_ACTIVITY], request(name, key, asked))
    writes = stats(sims)["label_writes"]
    again = await ActivityEnvironment().run(acts[ADD_LABELS_ACTIVITY], request(name, key, asked))  # a retry
    assert sorted(stored(sims, name)["labels"]) == ["bug", "question"]
    assert "security" in first.content and "refused" in first.content
    assert first.operation_key and again.operation_key == first.operation_key
    assert "already applied" in again.content and stats(sims)["label_writes"] == writes


async def test_labels_none_of_which_are_allowed_touch_nothing(sims, tools):
    acts, _ = tools
    name, key = target(sims)
    writes = stats(sims)["label_writes"]
    result = await ActivityEnvironment().run(acts[ADD_LABELS_ACTIVITY], request(name, key, {"labels": ["wontfix"]}))
    assert result.operation_key is None and "no label applied" in result.content
    assert stored(sims, name)["labels"] == [] and stats(sims)["label_writes"] == writes


async def test_labels_applied_before_a_crash_are_reconciled_not_written_again(sims, tools):
    acts, _ = tools
    name, key = target(sims)
    sims.forge_ctl("POST", "/faults", json={"method": "POST", "path": f"/{name}/issues/5/labels$",
                                           "after_commit": True, "status": 502})
    with pytest.raises(ApplicationError):  # the forge applied them; the answer was lost
        await ActivityEnvironment().run(acts[ADD_LABELS_ACTIVITY], request(name, key, {"labels": ["bug"]}))
    writes = stats(sims)["label_writes"]
    retried = await ActivityEnvironment().run(acts[ADD_LABELS_ACTIVITY], request(name, key, {"labels": ["bug"]}))
    assert retried.reconciled and "reconciled" in retried.content
    assert stored(sims, name)["labels"] == ["bug"] and stats(sims)["label_writes"] == writes


async def test_one_triage_comment_across_a_retry_and_a_crash(sims, tools):
    acts, _ = tools
    name, key = target(sims)
    sims.forge_ctl("POST", "/faults", json={"method": "POST", "path": f"/{name}/issues/5/comments$",
                                           "after_commit": True, "status": 502})
    body = {"body": "Labelled bug: a traceback."}
    with pytest.raises(ApplicationError):
        await ActivityEnvironment().run(acts[POST_TRIAGE_COMMENT_ACTIVITY], request(name, key, body))
    reconciled = await ActivityEnvironment().run(acts[POST_TRIAGE_COMMENT_ACTIVITY], request(name, key, body))
    again = await ActivityEnvironment().run(acts[POST_TRIAGE_COMMENT_ACTIVITY],
                                            request(name, key, {"body": "a second opinion"}, call="call-2"))
    mine = [c for c in sims.comments() if c["repo"] == name]
    assert len(mine) == 1 and mine[0]["body"].startswith("Labelled bug")
    assert reconciled.reconciled and reconciled.external_id == str(mine[0]["id"])
    assert "already posted" in again.content and again.operation_key == reconciled.operation_key


async def test_every_triage_tool_refuses_while_killed(sims, tools):
    acts, kills = tools
    name, key = target(sims)
    before = stats(sims)["by_repository"].get(f"acme/{name}", 0)
    kills.kill("work_key", key, "alice", "stop triage")
    try:
        for activity_name, args in ((GET_ISSUE_ACTIVITY, {}), (ADD_LABELS_ACTIVITY, {"labels": ["bug"]}),
                                    (POST_TRIAGE_COMMENT_ACTIVITY, {"body": "x"})):
            with pytest.raises(ApplicationError) as refused:
                await ActivityEnvironment().run(acts[activity_name], request(name, key, args))
            assert (refused.value.type, refused.value.non_retryable) == ("Killed", True), activity_name
    finally:
        kills.unkill("work_key", key, "carol", "resume")
    assert stats(sims)["by_repository"].get(f"acme/{name}", 0) == before
    assert stored(sims, name)["labels"] == []


@pytest.mark.parametrize("asked, answer", [
    (["Bug", "security", "bug"], (["bug"], ["security"])),
    (["Question", "DOCUMENTATION"], (["documentation", "question"], [])),
    ("bug", "error"),
    ([], "error"),
    (["bug"] * 21, "error"),
    ([1], "error"),
    (["x" * 51], "error"),
])
def test_the_model_s_labels_meet_the_allow_list(asked, answer):
    from tasks.triage.tools import choose_labels

    got = choose_labels(asked, ["bug", "enhancement", "question", "documentation"])
    assert got.startswith("error:") if answer == "error" else got == answer
