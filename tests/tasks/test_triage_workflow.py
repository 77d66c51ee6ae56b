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
