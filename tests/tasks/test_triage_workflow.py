"""A triage order end to end: the real agent workflow and worker wiring on a real Temporal server,
the real openai client against the model simulator's triage policy, the forge simulator over HTTP,
the outcome in a real ledger. The workflow picks the loop by the order's work-key task."""

from __future__ import annotations

from dataclasses import replace

import pytest

import ledger
from tests.support.agent_runs import run_orders, work_order
from tests.support.sims import settings_for

VERSION = "2024-05-07T08:12:30Z"
"""acme/api#101's ``updated_at`` in the forge fixtures (a crash report with a traceback)."""


@pytest.fixture
def settings(sims, tmp_path):
    sims.reset()
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    return settings_for(sims, url, SLUICEGATE__ACTIVITIES__MODEL_MAX_ATTEMPTS="3")


def triage_order(settings, number: int = 101, version: str = VERSION):
    order = work_order(settings, number=number, version=version)
    return replace(order, work_key=order.work_key.removesuffix(":review") + ":triage")


async def test_a_triage_order_labels_the_issue_and_comments_once(temporal_env, settings, sims, task_queue):
    order = triage_order(settings)
    result = await run_orders(temporal_env.client, settings, task_queue, order)
    [outcome] = result.orders
    assert outcome.status == "done", outcome.reason
    issue = sims.forge_ctl("GET", "/issues/acme/api/101").json()
    assert "bug" in issue["labels"] and set(issue["labels"]) <= set(settings.tasks.triage.labels)
    comments = [c for c in sims.comments() if c["number"] == 101]
    assert len(comments) == 1 and comments[0]["user"]["login"] == settings.forge.bot_login
    assert len(outcome.operation_keys) == 2  # add_labels and post_triage_comment, each through the ledger
    assert outcome.external_ids == [str(comments[0]["id"])]
    assert sims.model_stats()["by_work"] == {f"{order.work_key}@{VERSION}": outcome.steps}


async def test_the_allow_list_bounds_what_the_model_can_label(temporal_env, sims, tmp_path, task_queue):
    sims.reset()
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    settings = settings_for(sims, url, SLUICEGATE__TASKS__TRIAGE__LABELS='["question"]')
    result = await run_orders(temporal_env.client, settings, task_queue, triage_order(settings))
    assert result.orders[0].status == "done", result.orders[0].reason
    assert sims.forge_ctl("GET", "/issues/acme/api/101").json()["labels"] == ["question"]


async def test_a_triage_history_replays_deterministically(temporal_env, settings, sims, task_queue):
    """The loop's task choice comes from the work key and the import-time catalogue only: the
    recorded history of a triage order replays without a nondeterminism error."""
    from contextlib import AsyncExitStack

    from temporalio.worker import Replayer

    from tests.support.agent_runs import start_order
    from worker import create_worker
    from workflows.agent_loop import AgentLoopWorkflow

    order = triage_order(settings, number=102, version="2024-05-08T11:30:45Z")
    async with AsyncExitStack() as stack:
        worker = await create_worker(temporal_env.client, settings, stack, task_queue)
        async with worker:
            handle = await start_order(temporal_env.client, task_queue, order)
            result = await handle.result()
    assert result.orders[0].status == "done", result.orders[0].reason
    history = await handle.fetch_history()
    activities = [e.activity_task_scheduled_event_attributes.activity_type.name for e in history.events
                  if e.HasField("activity_task_scheduled_event_attributes")]
    assert {"sluicegate.tool.get_issue", "sluicegate.tool.add_issue_labels",
            "sluicegate.tool.post_triage_comment"} <= set(activities)
    await Replayer(workflows=[AgentLoopWorkflow]).replay_workflow(history)
