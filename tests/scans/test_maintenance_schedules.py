"""The stale-reservation sweep as a Temporal Schedule on the dev server (the time-skipping server
has no CreateSchedule): a dead worker's reservation is charged at its estimate, an answered one
settled from the journal; the grace must outlast a live attempt."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ledger import DayBudgets, ModelJournal, ModelJournalEntry, StepRef
from sluicegate.temporal import schedules as sched
from tests.scans.conftest import _ctx, eventually, running_worker


@pytest.fixture
def sweep_ctx(dev_env, sims, tmp_path, task_queue):
    c = _ctx(sims, tmp_path, task_queue, TEMPORAL_ADDRESS=dev_env.client.service_client.config.target_host,
             TEMPORAL_NAMESPACE=dev_env.client.namespace, SLUICEGATE__ACTIVITIES__MODEL_START_TO_CLOSE_SECONDS="1",
             SLUICEGATE__BUDGETS__STALE_RESERVATIONS__GRACE_SECONDS="2",
             SLUICEGATE__BUDGETS__STALE_RESERVATIONS__INTERVAL_SECONDS="3600")
    yield c
    c.engine.dispose()


async def test_the_sweep_schedule_ends_what_dead_workers_left_held(dev_env, sweep_ctx):
    client, settings = dev_env.client, sweep_ctx.settings
    budgets = DayBudgets(sweep_ctx.engine, 100.0, {}, 100.0)
    key = f"acme/github:{sweep_ctx.owner}/api#1:review"
    crashed = budgets.reserve("acme", key, 0.4, ref=StepRef(key, "v1", 1, 1, 1))  # died mid-call
    answered = budgets.reserve("acme", key, 0.3, ref=StepRef(key, "v1", 1, 2, 1))  # died after the answer
    ModelJournal(sweep_ctx.engine).record(ModelJournalEntry(
        work_key=key, input_version="v1", generation=1, step=2, request_digest="d", response={}, cost_usd=0.02,
        reservation_id=answered, attempt=1, created_at=datetime.now(UTC)))
    sid = sched.STALE_RESERVATIONS_SCHEDULE
    async with running_worker(client, sweep_ctx, search_attributes=True):
        try:
            assert await sched.apply_schedules(client, settings, [sid]) == {sid: "created"}
            handle = client.get_schedule_handle(sid)

            async def ended():
                await handle.trigger()
                rows = [budgets.reservation(r) for r in (crashed, answered)]
                return all(r.status != "reserved" for r in rows) and rows

            first, second = await eventually(ended, timeout=30, interval=1.0)
        finally:
            await client.get_schedule_handle(sid).delete()
    assert (first.status, first.spent_usd) == ("estimated", 0.4) and "stale-reservation sweep" in first.note
    assert (second.status, second.spent_usd) == ("settled", 0.02)


def test_a_grace_shorter_than_a_live_attempt_is_refused(ctx):
    settings = ctx.settings.model_copy(update={"budgets": ctx.settings.budgets.model_copy(update={
        "stale_reservations": ctx.settings.budgets.stale_reservations.model_copy(update={"grace_seconds": 30.0})})})
    with pytest.raises(ValueError, match="must exceed activities.model_start_to_close_seconds"):
        sched.maintenance_schedules(settings)
    assert sched.STALE_RESERVATIONS_SCHEDULE in sched.maintenance_schedules(ctx.settings)
