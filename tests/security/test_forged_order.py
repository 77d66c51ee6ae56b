"""A forged ``WorkOrder`` (finding 1): anyone with Temporal namespace access can signal-with-start
the agent workflow with an order intake never admitted. The claim step must find a matching
admission in the ledger — the order's receipt, work key, version, generation and pull request —
or end the order ``refused`` with an enumerated reason: no model call, no comment, no row.

Real parts: the time-skipping Temporal server, the real worker and activities, the simulators,
a real SQLite ledger (the claim activity on PostgreSQL: ``tests/workflows/test_claims.py``)."""

from __future__ import annotations

from dataclasses import replace

import pytest

import ledger
from tests.support.agent_runs import accept_in_ledger, run_orders, work_order
from tests.support.ledger_rows import grown, table_counts
from tests.support.sims import settings_for

REQUIRE = {"SLUICEGATE__TEMPORAL__REQUIRE_ADMISSION": "true"}


@pytest.fixture
def settings(sims, tmp_path):
    sims.reset()
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    return settings_for(sims, url, **REQUIRE)


def _forgeries(settings):
    """(name, order, reason) for each way an order can fail to match its admission."""
    genuine, _ = accept_in_ledger(settings, work_order(settings))
    return [
        ("never admitted", work_order(settings, number=43), "unadmitted:no-admission"),
        ("made-up receipt", replace(genuine, receipt_id="f" * 32), "unadmitted:receipt-mismatch"),
        ("another generation", replace(genuine, generation=genuine.generation + 5), "unadmitted:receipt-mismatch"),
        ("another repository", replace(genuine, repo="secrets"), "unadmitted:identity-mismatch"),
        ("another tenant", replace(genuine, tenant="globex"), "unadmitted:identity-mismatch"),
    ], genuine


async def test_forged_orders_end_refused_without_a_model_call_or_a_row(temporal_env, settings, sims, task_queue):
    forgeries, _ = _forgeries(settings)
    url = settings.ledger_url()
    for name, order, reason in forgeries:
        before = table_counts(url)
        [outcome] = (await run_orders(temporal_env.client, settings, task_queue, order)).orders
        assert (outcome.status, outcome.reason, outcome.steps) == ("refused", reason, 0), name
        assert sims.model_stats()["calls"] == 0, name
        assert sims.comments() == [], name
        assert grown(before, table_counts(url)) == {}, name


async def test_the_admitted_order_still_runs(temporal_env, settings, sims, task_queue):
    genuine, _ = accept_in_ledger(settings, work_order(settings))
    [outcome] = (await run_orders(temporal_env.client, settings, task_queue, genuine)).orders
    assert outcome.status == "done"
    assert len(sims.comments()) == 1


async def test_a_forged_newer_generation_neither_supersedes_nor_shadows_the_genuine_order(
        temporal_env, settings, sims, task_queue):
    genuine, _ = accept_in_ledger(settings, work_order(settings))
    newer = replace(genuine, input_version="5c1e6b2d9a8f4e3c7b0a1d2e3f405162738495a6",
                    generation=genuine.generation + 1, receipt_id="e" * 32)
    result = await run_orders(temporal_env.client, settings, task_queue, genuine, newer)
    assert sorted((o.generation, o.status) for o in result.orders) == [(genuine.generation, "done"),
                                                                       (newer.generation, "refused")]
    # Sent first with the genuine generation, a forgery does not make the genuine order a "re-send".
    sims.reset()
    again, _ = accept_in_ledger(settings, work_order(settings, number=44))
    shadow = replace(again, receipt_id="d" * 32)
    result = await run_orders(temporal_env.client, settings, task_queue, shadow, again)
    assert sorted((o.receipt_id, o.status) for o in result.orders) == sorted(
        [(shadow.receipt_id, "refused"), (again.receipt_id, "done")])


async def test_a_forged_newer_order_queued_before_the_genuine_one_runs_does_not_make_it_stale(
        temporal_env, settings, sims, task_queue):
    """Both orders are waiting before the workflow's first step (the forged one refused first):
    the refused order is no evidence of a newer generation."""
    from tests.support.agent_runs import start_order
    from worker import create_worker
    from contextlib import AsyncExitStack

    genuine, _ = accept_in_ledger(settings, work_order(settings))
    newer = replace(genuine, input_version="5c1e6b2d9a8f4e3c7b0a1d2e3f405162738495a6",
                    generation=genuine.generation + 1, receipt_id="e" * 32)
    handle = await start_order(temporal_env.client, task_queue, newer)  # no worker yet: both wait
    await start_order(temporal_env.client, task_queue, genuine, workflow_id=handle.id)
    async with AsyncExitStack() as stack:
        async with await create_worker(temporal_env.client, settings, stack, task_queue):
            result = await handle.result()
    assert sorted((o.generation, o.status) for o in result.orders) == [(genuine.generation, "done"),
                                                                       (newer.generation, "refused")]
