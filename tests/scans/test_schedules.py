"""Schedules on the Temporal dev server (the time-skipping server has no CreateSchedule).

apply (CLI, idempotent, keeps an operator's pause) · trigger runs a scan · pause stops ticks ·
overlapping ticks are skipped · backfill follows the overlap policy and ignores the catch-up
window · ticks missed while the server was down follow the catch-up window · goal start (CLI).
"""

from __future__ import annotations

import asyncio
import uuid
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from temporalio.client import Client, ScheduleOverlapPolicy
from temporalio.testing import WorkflowEnvironment
from typer.testing import CliRunner

from ledger import WatermarkStore
from sluicegate.temporal import schedules as sched
from sluicegate.config.settings import ScheduleConfig, Settings
from sluicegate.devstack import free_port
from starter import app
from tests.conftest import _bin
from tests.scans.conftest import Ctx, agent_results, eventually, running_worker
from workflows.scan_contracts import NOTHING_CHANGED, ScanResult, scan_source

PR44_HEAD = "bfc1b2c6a7697af60a9acbd1352b4c663a990925"
NEW_HEAD = "c0ffee00" * 5


def _sid() -> str:
    return f"t_{uuid.uuid4().hex[:8]}"


def _with_schedule(ctx: Ctx, sid: str, **cfg) -> Settings:
    schedule = ScheduleConfig(**{"repos": [ctx.repo("api"), ctx.repo("web")], "tenant": "acme", **cfg})
    return ctx.settings.model_copy(update={"schedules": {sid: schedule}})


async def _cli(args: list[str], env: dict[str, str]):
    result = await asyncio.to_thread(CliRunner().invoke, app, args, env={**env, "COLUMNS": "250"})
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result.output


@asynccontextmanager
async def _schedule(client: Client, settings: Settings, sid: str):
    """Apply one schedule; always delete it afterwards (the dev server outlives the test)."""
    try:
        assert await sched.apply_schedules(client, settings, [sid]) == {sid: "created"}
        yield client.get_schedule_handle(sid)
    finally:
        try:
            await client.get_schedule_handle(sid).delete()
        except Exception:  # noqa: BLE001 - not created
            pass


async def _scan_results(client: Client, handle) -> list[ScanResult]:
    d = await handle.describe()
    return [await client.get_workflow_handle(a.action.workflow_id, result_type=ScanResult).result()
            for a in d.info.recent_actions]


async def _admitted(client: Client, results: list[ScanResult]) -> list:
    return await agent_results(client, [d.workflow_id for r in results for d in r.decisions if d.outcome == "accept"])


async def test_cli_apply_is_idempotent_and_keeps_an_operator_pause(dev_env, dev_ctx):
    client, sid, cron_sid = dev_env.client, _sid(), _sid()
    env = {**dev_ctx.env, f"SLUICEGATE__SCHEDULES__{sid.upper()}__REPOS": f"[{dev_ctx.repo('api')}]",
           f"SLUICEGATE__SCHEDULES__{sid.upper()}__TENANT": "acme",
           f"SLUICEGATE__SCHEDULES__{sid.upper()}__INTERVAL": "1h",
           f"SLUICEGATE__SCHEDULES__{sid.upper()}__CATCHUP_WINDOW": "5m",
           f"SLUICEGATE__SCHEDULES__{cron_sid.upper()}__REPOS": f"[{dev_ctx.repo('web')}]",
           f"SLUICEGATE__SCHEDULES__{cron_sid.upper()}__TENANT": "acme",
           f"SLUICEGATE__SCHEDULES__{cron_sid.upper()}__CRON": "0 9 * * 1-5",
           f"SLUICEGATE__SCHEDULES__{cron_sid.upper()}__TIME_ZONE": "Europe/Paris",
           f"SLUICEGATE__SCHEDULES__{cron_sid.upper()}__JITTER": "0s"}
    handle = client.get_schedule_handle(sid)
    try:
        out = await _cli(["schedule", "apply", "--id", sid, "--id", cron_sid], env)
        assert f"{sid}: created" in out and f"{cron_sid}: created" in out
        d = await handle.describe()
        assert [i.every for i in d.schedule.spec.intervals] == [timedelta(hours=1)]
        assert (d.schedule.policy.overlap, d.schedule.policy.catchup_window) == (ScheduleOverlapPolicy.SKIP,
                                                                                  timedelta(minutes=5))
        assert (d.schedule.action.workflow, d.schedule.action.task_queue) == ("Scan", dev_ctx.task_queue)
        nxt = (await client.get_schedule_handle(cron_sid).describe()).info.next_action_times[0]
        local = nxt.astimezone(ZoneInfo("Europe/Paris"))
        assert (local.hour, local.minute, local.weekday() < 5) == (9, 0, True)

        await _cli(["schedule", "pause", sid, "--reason", "forge maintenance"], env)
        out = await _cli(["schedule", "apply", "--id", sid], {**env, f"SLUICEGATE__SCHEDULES__{sid.upper()}__INTERVAL": "2h"})
        assert f"{sid}: updated" in out
        d = await handle.describe()
        assert [i.every for i in d.schedule.spec.intervals] == [timedelta(hours=2)]
        assert (d.schedule.state.paused, d.schedule.state.note) == (True, "forge maintenance")
        out = await _cli(["schedule", "list"], env)
        assert any(sid in line and "paused (forge maintenance)" in line for line in out.splitlines())
        await _cli(["schedule", "unpause", sid, "--reason", "forge is back"], env)
        assert not (await handle.describe()).schedule.state.paused
    finally:
        for s in (sid, cron_sid):
            try:
                await client.get_schedule_handle(s).delete()
            except Exception:  # noqa: BLE001
                pass


async def test_trigger_runs_a_scan_then_the_next_one_is_no_work(dev_env, dev_ctx, sims):
    client, sid = dev_env.client, _sid()
    settings = _with_schedule(dev_ctx, sid, interval="1h", start_paused=True)  # only triggers in this test
    async with running_worker(client, dev_ctx, search_attributes=True), _schedule(client, settings, sid) as handle:
        assert (await handle.describe()).schedule.state.paused  # a trigger runs even when paused
        await sched.trigger(client, sid)
        await eventually(lambda: _actions_at_least(handle, 1))
        [first] = await _scan_results(client, handle)
        assert [(d.outcome, d.reason) for d in first.decisions] == [("accept", "admitted")] * 3
        await _admitted(client, [first])
        assert sims.model_stats()["calls"] == 9
        await sched.trigger(client, sid)
        await eventually(lambda: _actions_at_least(handle, 2))
        second = (await _scan_results(client, handle))[1]
    assert second.decisions == [] and second.no_work_receipt_id
    assert [(r.outcome, r.reason) for r in dev_ctx.receipts(source=scan_source(sid))] == (
        [("accept", "admitted")] * 3 + [("no-work", NOTHING_CHANGED)])
    assert sims.model_stats()["calls"] == 9


async def _actions_at_least(handle, n: int) -> bool:
    d = await handle.describe()
    return len(d.info.recent_actions) >= n and not d.info.running_actions


async def test_pause_stops_ticks_and_unpause_resumes_them(dev_env, dev_ctx):
    client, sid = dev_env.client, _sid()
    settings = _with_schedule(dev_ctx, sid, interval="1s", catchup_window="10s")
    async with running_worker(client, dev_ctx, search_attributes=True), _schedule(client, settings, sid) as handle:
        await eventually(lambda: _count_at_least(handle, 2))
        await sched.pause(client, sid, "drill")
        await asyncio.sleep(1.5)  # a tick already being processed may still start
        paused_at = (await handle.describe()).info.num_actions
        await asyncio.sleep(3)
        d = await handle.describe()
        assert (d.info.num_actions, d.schedule.state.paused, d.schedule.state.note) == (paused_at, True, "drill")
        await sched.unpause(client, sid, "drill over")
        await eventually(lambda: _count_at_least(handle, paused_at + 1))
        await sched.pause(client, sid, "test over")
        await eventually(lambda: _idle(handle))
        await _admitted(client, await _scan_results(client, handle))
    # ticks taken while paused are never caught up: nothing was "missed", nothing ran in the pause
    assert d.info.num_actions_missed_catchup_window == 0


async def _count_at_least(handle, n: int) -> bool:
    return (await handle.describe()).info.num_actions >= n


async def _idle(handle) -> bool:
    return not (await handle.describe()).info.running_actions


async def test_overlapping_ticks_are_skipped_while_a_scan_is_still_running(dev_env, dev_ctx):
    """No worker for a while (a scan that cannot finish): with SKIP, one scan waits, later ticks are dropped;
    once a worker is back that one scan decides everything since the watermark."""
    client, sid = dev_env.client, _sid()
    settings = _with_schedule(dev_ctx, sid, interval="1s", overlap="skip")
    async with _schedule(client, settings, sid) as handle:
        await asyncio.sleep(3.5)
        d = await handle.describe()
        assert (d.info.num_actions, len(d.info.running_actions)) == (1, 1)
        assert d.info.num_actions_skipped_overlap >= 2
        async with running_worker(client, dev_ctx, search_attributes=True):
            await eventually(lambda: _count_at_least(handle, 2))
            await sched.pause(client, sid, "test over")
            await eventually(lambda: _idle(handle))
            results = await _scan_results(client, handle)
            await _admitted(client, results)
    assert [len(r.decisions) for r in results][0] == 3  # the delayed scan caught up on everything
    assert all(r.no_work_receipt_id for r in results[1:])


async def test_backfill_runs_past_ticks_per_overlap_policy_outside_the_catchup_window(dev_env, dev_ctx, sims):
    client, sid = dev_env.client, _sid()
    settings = _with_schedule(dev_ctx, sid, interval="1m", overlap="skip", catchup_window="10s", start_paused=True)
    minute = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(hours=1)
    base = minute + timedelta(seconds=30)  # window edges between ticks: no inclusive/exclusive question
    async with running_worker(client, dev_ctx, search_attributes=True), _schedule(client, settings, sid) as handle:
        # Five ticks an hour ago (far outside the 10 s catch-up window), schedule policy SKIP:
        # they are evaluated at once, the first scan is still running, the other four are dropped.
        await sched.backfill(client, sid, base - timedelta(minutes=5), base)
        await eventually(lambda: _settled(handle, 1))
        d = await handle.describe()
        assert (d.info.num_actions, d.info.num_actions_skipped_overlap) == (1, 4)
        # The five ticks before those with BUFFER_ALL: every one runs, one after the other.
        await sched.backfill(client, sid, base - timedelta(minutes=10), base - timedelta(minutes=5), "buffer_all")
        await eventually(lambda: _settled(handle, 6), timeout=30)
        d = await handle.describe()
        results = await _scan_results(client, handle)
        await _admitted(client, results)
    assert (d.info.num_actions, d.info.num_actions_skipped_overlap, d.info.num_actions_missed_catchup_window) == (
        6, 4, 0)
    assert [a.scheduled_at for a in d.info.recent_actions] == (
        [minute - timedelta(minutes=4)] + [minute - timedelta(minutes=m) for m in (9, 8, 7, 6, 5)])
    assert [len(r.decisions) for r in results] == [3, 0, 0, 0, 0, 0]
    assert sum(1 for r in dev_ctx.receipts(source=scan_source(sid)) if r.reason == NOTHING_CHANGED) == 5
    assert sims.model_stats()["calls"] == 9


async def _settled(handle, n: int) -> bool:
    d = await handle.describe()
    return d.info.num_actions >= n and not d.info.running_actions


async def test_ticks_missed_while_the_server_was_down_follow_the_catchup_window(dev_ctx, sims, tmp_path):
    """Server down ~16 s, ticks every 2 s, catch-up window 10 s, overlap SKIP: after the restart the
    ticks older than 10 s are dropped (missed), the oldest one inside the window starts one scan,
    the rest of the window overlaps it and is skipped. That one scan decides the change pushed
    during the downtime (it reads from the watermark, not from the tick)."""
    db, port, sid = str(tmp_path / "temporal.sqlite"), free_port(), _sid()

    async def server() -> WorkflowEnvironment:
        return await WorkflowEnvironment.start_local(dev_server_existing_path=_bin("temporal"), port=port,
                                                     dev_server_database_filename=db)

    env = await server()
    settings = _with_schedule(dev_ctx, sid, interval="2s", catchup_window="10s", overlap="skip")
    schedule = settings.schedules[sid]
    first_tick = datetime.now(UTC) + timedelta(seconds=8)  # room for a loaded machine before the outage
    desired = sched.schedule_for(sid, schedule, settings)
    desired.spec.start_at = first_tick  # no tick before the outage: every tick falls into it
    handle = await env.client.create_schedule(sid, desired)
    # The scheduler must have run once (it counts missed ticks from its last processed time).
    assert (await handle.describe()).info.next_action_times[0] >= first_tick - timedelta(seconds=1)
    assert datetime.now(UTC) < first_tick - timedelta(seconds=1)
    await env.shutdown()
    down_at = datetime.now(UTC)
    dev_ctx.push("api", 44, head_sha=NEW_HEAD)  # a change while Temporal is down
    # Back up 14 s after the first tick (> catch-up window + a tick): the outage's first ticks age out.
    await asyncio.sleep((first_tick + timedelta(seconds=14) - datetime.now(UTC)).total_seconds())
    env = await server()
    up_at = datetime.now(UTC)
    try:
        handle = env.client.get_schedule_handle(sid)
        async with running_worker(env.client, dev_ctx, search_attributes=False):
            await eventually(lambda: _settled(handle, 1))
            d = await handle.describe()
            await handle.pause(note="test over")
            await eventually(lambda: _idle(handle))
            results = await _scan_results(env.client, handle)
            await _admitted(env.client, results)
            d = await handle.describe()
    finally:
        await env.shutdown()
    caught_up = [a for a in d.info.recent_actions if a.scheduled_at < up_at]
    assert len(caught_up) == 1, d.info.recent_actions  # SKIP: one scan for the whole outage
    [tick] = caught_up
    assert down_at < tick.scheduled_at and up_at - tick.scheduled_at <= timedelta(seconds=10)
    assert d.info.num_actions_missed_catchup_window >= 1  # the outage's first ticks were too old
    assert d.info.num_actions_skipped_overlap >= 1  # the rest of the window overlapped the catch-up scan
    by_pr = {dd.work_key: (dd.input_version, dd.outcome) for dd in results[0].decisions}
    assert by_pr[dev_ctx.key("api", 44)] == (NEW_HEAD, "accept") and len(by_pr) == 3
    assert f"44@{NEW_HEAD}" in WatermarkStore(dev_ctx.engine).get(sid, dev_ctx.repo("api")).boundary


async def test_goal_start_cli_watches_until_the_condition_and_admits(dev_env, dev_ctx, sims):
    client = dev_env.client
    async with running_worker(client, dev_ctx, search_attributes=True):
        out = await _cli(["goal", "start", "--repo", dev_ctx.repo("api"), "--pr", "44", "--until", f"head:{PR44_HEAD[:12]}",
                          "--poll-seconds", "5", "--max-polls", "3", "--deadline-minutes", "1", "--wait"],
                         dev_ctx.env)
        assert f"goal started: workflow goal/{dev_ctx.key('api', 44)}/head:" in out
        assert '"met": true' in out and '"polls": 1' in out
        [receipt] = dev_ctx.receipts(source="goal")
        assert (receipt.outcome, receipt.trigger_kind, receipt.input_version) == ("accept", "goal", PR44_HEAD)
        await agent_results(client, [receipt.workflow_id])
    refused = await asyncio.to_thread(CliRunner().invoke, app, [
        "goal", "start", "--repo", dev_ctx.repo("api"), "--pr", "44", "--until", "ready", "--max-polls", "100000"],
        env=dev_ctx.env)
    assert refused.exit_code != 0 and "max_polls_limit" in refused.output


async def test_failed_scan_pauses_a_schedule_with_pause_on_failure(dev_env, dev_ctx):
    client, sid = dev_env.client, _sid()
    settings = _with_schedule(dev_ctx, sid, repos=[dev_ctx.repo("api"), dev_ctx.repo("missing")],
                              cron="0 0 1 1 *", pause_on_failure=True)  # no natural tick during the test
    async with running_worker(client, dev_ctx, search_attributes=True), _schedule(client, settings, sid) as handle:
        await sched.trigger(client, sid)
        d = await eventually(lambda: _paused(handle))
        [action] = d.info.recent_actions
        results = await _scan_results_allowing_failure(client, action.action.workflow_id)
        # the runs finish while the worker is still up (their last activity gives back their slots)
        for r in dev_ctx.receipts(source=scan_source(sid), outcome="accept"):
            await agent_results(client, [r.workflow_id])
    # acme/api was still scanned (and its watermark advanced); acme/missing (404) failed the scan.
    assert f"{dev_ctx.repo('missing')}: cannot list pull requests (ForgeRequestRejected)" in results
    assert WatermarkStore(dev_ctx.engine).get(sid, dev_ctx.repo("api")) is not None
    assert len(dev_ctx.receipts(source=scan_source(sid), outcome="accept")) == 2


async def _paused(handle):
    d = await handle.describe()
    return d if d.schedule.state.paused and not d.info.running_actions else None


async def _scan_results_allowing_failure(client: Client, workflow_id: str) -> str:
    from temporalio.client import WorkflowFailureError

    try:
        await client.get_workflow_handle(workflow_id).result()
    except WorkflowFailureError as exc:
        return str(exc.cause)
    raise AssertionError("the scan was expected to fail")
