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
from workflows.policy_step import RECHECK_ATTEMPTS


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


def _forge_down_for(sims, order) -> None:
    """Every read of ``order``'s pull request answers 503 (more times than the recheck retries)."""
    sims.forge_ctl("POST", "/faults", json={"method": "GET", "path": f"/{order.repo}/pulls/{order.number}$",
                                            "status": 503, "times": 1000})


async def test_a_repository_refusal_is_written_while_the_forge_is_down(temporal_env, sims, ledger_url, task_queue):
    """The repository rule needs no read: the refusal does not wait for (or depend on) the forge."""
    order = _admitted_under(settings_for(sims, ledger_url), sims, "v1")
    settings = settings_for(sims, ledger_url, SLUICEGATE__INTAKE__POLICY_VERSION="v2",
                            SLUICEGATE__INTAKE__POLICY_REFUSE_REPOSITORIES=json.dumps([f"{order.owner}/*"]))
    _forge_down_for(sims, order)
    try:
        [outcome] = (await run_orders(temporal_env.client, settings, task_queue, order)).orders
    finally:
        sims.forge_ctl("DELETE", "/faults")
    assert (outcome.status, outcome.steps) == ("skipped", 0)
    version, receipts = _rows(ledger_url, order)
    [refusal] = [r for r in receipts if r.outcome == "reject"]
    assert (version.status, refusal.reason, refusal.activity_attempt) == ("skipped", "policy:repository-refused", 1)


async def test_a_policy_that_cannot_be_re_checked_fails_closed(own_time_skipping_env, sims, ledger_url, task_queue):
    """The forge down through every attempt: the order ends skipped with a receipt saying why, no model call,
    and the skipped version can be admitted again. Its own time-skipping server: the retries' backoff
    adds up to about 14 minutes of timers (the dev-server pass and a shared server cannot skip them)."""
    temporal_env = own_time_skipping_env
    order = _admitted_under(settings_for(sims, ledger_url), sims, "v1")
    settings = settings_for(sims, ledger_url, SLUICEGATE__INTAKE__POLICY_VERSION="v2")
    calls = sims.model_stats()["by_work"].get(f"{order.work_key}@{order.input_version}", 0)
    _forge_down_for(sims, order)
    try:
        [outcome] = (await run_orders(temporal_env.client, settings, task_queue, order)).orders
    finally:
        sims.forge_ctl("DELETE", "/faults")
    assert (outcome.status, outcome.steps) == ("skipped", 0)
    assert outcome.reason.startswith("policy:recheck-unavailable under policy v2")
    assert sims.model_stats()["by_work"].get(f"{order.work_key}@{order.input_version}", 0) == calls
    version, receipts = _rows(ledger_url, order)
    [refusal] = [r for r in receipts if r.outcome == "reject"]
    assert (version.status, refusal.reason, refusal.policy_version) == ("skipped", "policy:recheck-unavailable", "v2")
    assert refusal.activity_attempt == RECHECK_ATTEMPTS and "could not be re-checked" in refusal.message
    again = admit_in_ledger(settings, replace(order, policy_version=None))  # a skipped version is admitted again
    assert again.generation > order.generation
