"""Watermark store (SQLite and PostgreSQL), the forge listing, schedule config → Temporal objects."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from temporalio.client import ScheduleOverlapPolicy

from ledger import WatermarkStore
from sluicegate.config.settings import DEFAULT_CONFIG_FILE, ConfigError, ScheduleConfig, load_settings, parse_duration
from sluicegate.forge.client import ForgeClient
from sluicegate.temporal.schedules import schedule_for, scan_request_for
from tests.support.sims import FORGE_TOKEN

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def test_watermark_only_moves_forward_and_merges_the_boundary(engine):
    store, scan = WatermarkStore(engine), f"s-{uuid.uuid4().hex[:8]}"
    assert store.get(scan, "acme/api") is None
    first = store.advance(scan, "ACME/api", T0, ["1@a"])
    assert (first.updated_at, first.boundary) == (T0, {"1@a"}) and store.get(scan, "acme/api") == first
    assert store.advance(scan, "acme/api", T0, ["2@b"]).boundary == {"1@a", "2@b"}  # same second: merged
    older = store.advance(scan, "acme/api", T0 - timedelta(seconds=5), ["0@z"])  # a slower concurrent scan
    assert (older.updated_at, older.boundary) == (T0, {"1@a", "2@b"})
    newer = store.advance(scan, "acme/api", T0 + timedelta(seconds=1), ["3@c"])
    assert (newer.updated_at, newer.boundary) == (T0 + timedelta(seconds=1), {"3@c"})
    assert store.get(scan, "acme/web") is None and store.get("other", "acme/api") is None


def test_watermark_admits_exactly_the_undecided():
    store_wm = __import__("ledger").Watermark("s", "acme/api", T0, frozenset({"1@a"}))
    assert not store_wm.admits(T0 - timedelta(seconds=1), "9@x")
    assert not store_wm.admits(T0, "1@a")  # decided at the boundary
    assert store_wm.admits(T0, "2@b")  # same second, not decided yet
    assert store_wm.admits(T0, "1@new")  # same pull request, new head in the same second
    assert store_wm.admits(T0 + timedelta(seconds=1), "1@a")


async def test_list_open_pulls_follows_every_page_oldest_update_first(sims):
    sims.reset()
    for n in range(1, 106):
        sims.forge_ctl("POST", f"/pulls/acme/many/{n}", json={"state": "closed" if n % 50 == 0 else "open"})
    time.sleep(1.05)  # the forge's updated_at has one-second resolution
    sims.forge_ctl("POST", "/pulls/acme/many/1", json={"title": "touched last"})
    forge = ForgeClient(sims.forge.base_url, FORGE_TOKEN)
    try:
        pulls = await forge.list_open_pulls("acme", "many")
    finally:
        await forge.aclose()
    assert len(pulls) == 103 and {p["state"] for p in pulls} == {"open"}
    assert pulls[-1]["number"] == 1
    stamps = [p["updated_at"] for p in pulls]
    assert stamps == sorted(stamps)
    stats = sims.forge_ctl("GET", "/stats").json()["requests"]
    assert stats["GET /repos/{owner}/{repo}/pulls"] == 2  # two pages of 100


def test_durations_and_schedule_validation():
    assert parse_duration("1h30m") == timedelta(minutes=90) and parse_duration(45) == timedelta(seconds=45)
    assert parse_duration("2.5s") == timedelta(seconds=2.5)
    base = {"repos": ["acme/api"], "tenant": "acme"}
    with pytest.raises(ValueError, match="exactly one of cron or interval"):
        ScheduleConfig(**base)
    with pytest.raises(ValueError, match="exactly one of cron or interval"):
        ScheduleConfig(**base, cron="* * * * *", interval="1m")
    with pytest.raises(ValueError, match="at least 10s"):
        ScheduleConfig(**base, interval="1m", catchup_window="5s")
    with pytest.raises(ValueError, match="unknown time zone"):
        ScheduleConfig(**base, cron="0 9 * * *", time_zone="Mars/Olympus")
    with pytest.raises(ValueError, match="at most 5000"):
        ScheduleConfig(repos=[f"acme/r{i}" for i in range(30)], tenant="acme", interval="1m")
    with pytest.raises(ValueError, match="overlap"):
        ScheduleConfig(**base, interval="1m", overlap="sometimes")


def test_repo_config_declares_a_scan_schedule_and_env_can_add_one():
    s = load_settings(DEFAULT_CONFIG_FILE, env={})
    cfg = s.schedules["scan-acme"]
    assert (cfg.interval, cfg.overlap, cfg.catchup_window) == (timedelta(minutes=5), "skip", timedelta(minutes=10))
    env = {"SLUICEGATE__SCHEDULES__NIGHTLY__REPOS": "[acme/web]", "SLUICEGATE__SCHEDULES__NIGHTLY__TENANT": "acme",
           "SLUICEGATE__SCHEDULES__NIGHTLY__CRON": "0 2 * * *",
           "SLUICEGATE__SCHEDULES__NIGHTLY__TIME_ZONE": "Europe/Paris"}
    assert load_settings(DEFAULT_CONFIG_FILE, env=env).schedules["nightly"].cron == "0 2 * * *"
    with pytest.raises(ConfigError, match="schedules.nightly"):
        load_settings(DEFAULT_CONFIG_FILE, env={**env, "SLUICEGATE__SCHEDULES__NIGHTLY__INTERVAL": "1h"})


def test_schedule_config_maps_onto_temporal_spec_policy_and_action():
    s = load_settings(DEFAULT_CONFIG_FILE, env={})
    cfg = ScheduleConfig(repos=["Acme/API", "acme/web"], tenant="acme", cron="0 9 * * 1-5", time_zone="Europe/Paris",
                         jitter="30s", overlap="buffer_one", catchup_window="2m", pause_on_failure=True,
                         max_candidates=50, note="weekday mornings")
    sched = schedule_for("mornings", cfg, s)
    assert (sched.spec.cron_expressions, sched.spec.intervals, sched.spec.time_zone_name, sched.spec.jitter) == (
        ["0 9 * * 1-5"], [], "Europe/Paris", timedelta(seconds=30))
    assert (sched.policy.overlap, sched.policy.catchup_window, sched.policy.pause_on_failure) == (
        ScheduleOverlapPolicy.BUFFER_ONE, timedelta(minutes=2), True)
    action = sched.action
    assert (action.workflow, action.id, action.task_queue) == ("Scan", "scan/mornings", s.temporal.task_queue)
    assert action.args == [scan_request_for("mornings", cfg)]
    assert action.args[0].repos == ["acme/api", "acme/web"] and action.args[0].max_candidates == 50
    assert sched.state.note == "weekday mornings" and not sched.state.paused
