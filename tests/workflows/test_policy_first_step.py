"""Policy version is live for admitted work: an order admitted under an older policy version is
re-decided before its first step (patch ``policy-first-step``).

Real parts: the time-skipping (or dev) Temporal server, the real worker and activities, the forge
and model simulators over HTTP, the ledger on SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
from dataclasses import replace

from sqlmodel import Session, select

import ledger
from ledger import Receipt, WorkVersion
from tests.support.agent_runs import admit_in_ledger, copy_of_pr42, run_orders, work_order
from tests.support.sims import settings_for


def _admitted_under(settings, sims, version: str):
    """A fresh pull request's order, admitted in the ledger, carrying ``version`` as its policy version."""
    owner, head = copy_of_pr42(sims)
    order = admit_in_ledger(settings, work_order(settings, owner=owner, version=head))
    return replace(order, policy_version=version)


def _rows(url: str, order):
    engine = ledger.make_engine(url)
    with Session(engine) as s:
        version = s.get(WorkVersion, (order.work_key, order.input_version))
        receipts = list(s.exec(select(Receipt).where(Receipt.work_key == order.work_key).order_by(Receipt.created_at)))
    engine.dispose()
    return version, receipts


async def test_an_order_the_new_policy_refuses_ends_skipped_with_a_receipt_naming_it(
        temporal_env, sims, ledger_url, task_queue):
    base = settings_for(sims, ledger_url)
    order = _admitted_under(base, sims, "v1")
    settings = settings_for(sims, ledger_url, SLUICEGATE__INTAKE__POLICY_VERSION="v2",
                            SLUICEGATE__INTAKE__POLICY_REFUSE_REPOSITORIES=json.dumps([f"{order.owner}/*"]))
    calls = sims.model_stats()["by_work"].get(f"{order.work_key}@{order.input_version}", 0)
    [outcome] = (await run_orders(temporal_env.client, settings, task_queue, order)).orders
    assert (outcome.status, outcome.steps) == ("skipped", 0)
    assert outcome.reason == "policy:repository-refused under policy v2 (admitted under v1)"
    assert sims.model_stats()["by_work"].get(f"{order.work_key}@{order.input_version}", 0) == calls  # no model call
    version, receipts = _rows(ledger_url, order)
    assert version.status == "skipped"  # recorded: the version left `admitted`
    [refusal] = [r for r in receipts if r.outcome == "reject"]
    assert (refusal.reason, refusal.policy_version, refusal.generation) == (
        "policy:repository-refused", "v2", order.generation)
    assert refusal.workflow_id and refusal.run_id == outcome.run_id
    assert refusal.activity_attempt == 1  # written inside the recheck activity, stamped by the worker
    assert "admitted under policy v1" in refusal.message


async def test_an_order_under_the_current_policy_or_one_it_still_permits_runs(
        temporal_env, sims, ledger_url, task_queue):
    settings = settings_for(sims, ledger_url, SLUICEGATE__INTAKE__POLICY_VERSION="v2")
    current = _admitted_under(settings, sims, "v2")
    older = _admitted_under(settings, sims, "v1")  # the new policy refuses nothing it carries
    for order in (current, older):
        [outcome] = (await run_orders(temporal_env.client, settings, task_queue, order)).orders
        assert (outcome.status, outcome.reason) == ("done", "completed")
        version, receipts = _rows(ledger_url, order)
        assert version.status == "done" and [r.outcome for r in receipts] == ["accept"]
