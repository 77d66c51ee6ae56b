"""Generations only move forward, and the journal and reservations behind each model step, on a
real Temporal server with the real worker wiring and the simulators."""

from __future__ import annotations

from dataclasses import replace

import pytest
from sqlmodel import Session, select

import ledger
from ledger import BudgetReservation, ModelJournalEntry, WorkVersion
from tests.support.agent_runs import PR42_HEAD, accept_versions, run_orders, work_order
from tests.support.sims import fresh_settings

NEWER = "5c1e6b2d9a8f4e3c7b0a1d2e3f405162738495a6"


@pytest.fixture
def settings(sims, tmp_path):
    return fresh_settings(sims, tmp_path)


def _rows(settings, model, *where):
    engine = ledger.make_engine(settings.ledger_url())
    with Session(engine) as s:
        rows = list(s.exec(select(model).where(*where)))
    engine.dispose()
    return rows


async def test_an_older_generation_arriving_after_a_newer_one_finished_is_superseded_unrun(
        temporal_env, settings, sims, task_queue):
    old = work_order(settings, generation=1)
    new = work_order(settings, version=NEWER, generation=2)
    sims.forge_ctl("POST", "/pulls/acme/api/42", json={"head_sha": NEWER})
    done, late = (await run_orders(temporal_env.client, settings, task_queue, new, old)).orders
    assert (done.generation, done.status) == (2, "done")
    assert (late.generation, late.status, late.steps) == (1, "superseded", 0)
    assert late.reason == f"superseded by {NEWER} (generation 2)"
    assert sims.model_stats()["by_work"] == {f"{new.work_key}@{NEWER}": 3}  # no call for the old one
    engine = ledger.make_engine(settings.ledger_url())
    assert ledger.DeadLetters(engine).list() == []
    engine.dispose()


async def test_a_relay_signal_after_the_run_completed_is_skipped(temporal_env, settings, sims, task_queue):
    order = work_order(settings)
    [generation] = accept_versions(settings, order.work_key, PR42_HEAD)
    order = replace(order, generation=generation)
    [first] = (await run_orders(temporal_env.client, settings, task_queue, order)).orders
    [again] = (await run_orders(temporal_env.client, settings, task_queue, order)).orders  # a new run
    assert (first.status, first.steps) == ("done", 3)
    assert (again.status, again.reason) == ("skipped", f"already ended done (generation {generation})")
    assert sims.model_stats()["calls"] == 3 and len(sims.comments()) == 1
    [version] = _rows(settings, WorkVersion, WorkVersion.work_key == order.work_key)
    assert (version.status, version.result["steps"]) == ("done", 3)  # the first end stands


async def test_every_step_reserves_once_and_settles_what_it_was_billed(temporal_env, settings, sims, task_queue):
    order = work_order(settings)
    [outcome] = (await run_orders(temporal_env.client, settings, task_queue, order)).orders
    reservations = _rows(settings, BudgetReservation, BudgetReservation.work_key == order.work_key)
    journal = _rows(settings, ModelJournalEntry, ModelJournalEntry.work_key == order.work_key)
    assert sorted((r.step, r.attempt, r.status) for r in reservations) == [(1, 1, "settled"), (2, 1, "settled"),
                                                                           (3, 1, "settled")]
    assert sum(r.spent_usd for r in reservations) == pytest.approx(outcome.cost_usd)
    assert all(r.spent_usd <= r.amount_usd for r in reservations)
    assert sorted(e.step for e in journal) == [1, 2, 3]
    assert {e.reservation_id for e in journal} == {r.id for r in reservations}


async def test_a_rerun_of_the_same_generation_reads_unchanged_steps_from_the_journal(
        temporal_env, settings, sims, task_queue):
    """No ledger admission (so no skip): the same order in a new run asks steps 1 and 2 exactly as
    before and gets them from the journal; step 3 follows a different tool answer ("comment
    already posted"), so it is a different question and goes to the provider."""
    order = work_order(settings)
    await run_orders(temporal_env.client, settings, task_queue, order)
    [again] = (await run_orders(temporal_env.client, settings, task_queue, replace(order, receipt_id="r2"))).orders
    assert (again.status, again.steps) == ("done", 3)
    assert sims.model_stats()["by_work"] == {f"{order.work_key}@{PR42_HEAD}": 4}
    reservations = _rows(settings, BudgetReservation, BudgetReservation.work_key == order.work_key)
    assert sorted(r.step for r in reservations) == [1, 2, 3, 3]  # journaled steps reserved nothing
