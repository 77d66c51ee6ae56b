"""Status that scales, and ``--json`` on every list command, as an operator runs them (real ledger,
the test environment's Temporal for the commands that read it). Values are compared with the
ledger's own rows, not with hard-coded output."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

import ledger
from intake.capacity import Block, CapacityPlanner, CapacityRequest, SlotClaim
from intake.decision import Outcome, Reason
from intake.envelope import TriggerKind
from intake.ports import CapacityContext
from intake.receipts import ReceiptDraft
from sluicegate.cli.json_output import dumps
from sluicegate.operations.status import Status, shown

ROOT = Path(__file__).resolve().parents[1]


def _starter(url: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SLUICEGATE__LEDGER__URL": url, "COLUMNS": "200", **env}
    return subprocess.run([sys.executable, str(ROOT / "starter.py"), *args], env=env, capture_output=True,
                          text=True, timeout=120)


def _json(url: str, *args: str, **env: str):
    done = _starter(url, *args, "--json", **env)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def _draft(tenant: str, number: int) -> ReceiptDraft:
    return ReceiptDraft(outcome=Outcome.ACCEPT, reason=Reason.ADMITTED, message="admitting",
                        trigger_kind=TriggerKind.EVENT, source="github", received_at=datetime.now(UTC),
                        delivery_id=str(uuid.uuid4()), tenant=tenant,
                        work_key=f"{tenant}/github:{tenant}/r{number}#1:review", target_id=f"{tenant}/r{number}#1",
                        input_version="v1")


@pytest.fixture(scope="module")
def busy_ledger(tmp_path_factory):
    """30 runs on 30 repositories' concurrency keys, 8 of which ended (their counters idle at 0)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('json') / 'ledger.sqlite'}"
    ledger.upgrade(url)
    engine = ledger.make_engine(url)
    store, capacity = ledger.SqlIntakeStore(engine), ledger.CapacityLedger(engine)
    for n in range(30):
        ctx = CapacityContext(CapacityRequest("acme", 3, (SlotClaim(f"key:repo:acme/r{n:02d}", 2, Block.KEY),)), {})
        assert store.decide(_draft("acme", n), ctx).outcome == Outcome.ACCEPT
    for n in range(8):
        capacity.release(f"acme/github:acme/r{n}#1:review")
    ledger.KillSwitch(engine).kill("tenant", "acme", "alice", "runaway costs")
    counters = capacity.counters()
    engine.dispose()
    return url, counters


def test_status_shows_busy_counters_only_top_n_and_says_how_many_were_hidden(busy_ledger):
    url, counters = busy_ledger
    busy = sorted(k for k, a in counters.items() if a > 0)
    assert len(busy) == 22 and len(counters) == 30
    out = " ".join(_starter(url, "status").stdout.split())
    assert "10 counter(s), idle at 0 or past the top rows hidden; --all shows them" in out
    assert sum(k in out for k in counters) == 20 and "key:repo:acme/r00" not in out  # an idle one
    top3 = " ".join(_starter(url, "status", "--top", "3").stdout.split())
    assert sum(k in top3 for k in counters) == 3 and "27 counter(s)" in top3
    everything = " ".join(_starter(url, "status", "--all").stdout.split())
    assert all(k in everything for k in counters) and "hidden" not in everything


def test_status_json_is_the_same_view_with_stable_keys(busy_ledger):
    url, counters = busy_ledger
    doc = _json(url, "status", "--top", "5")
    assert {c["key"]: c["active"] for c in doc["counters"]}.items() <= counters.items()
    assert len(doc["counters"]) == 5 and doc["counters_hidden"] == len(counters) - 5
    assert doc["active_by_tenant"][0]["runs"] == 22 and doc["dead_letters_open"] == 0
    everything = _json(url, "status", "--all")
    assert {c["key"]: c["active"] for c in everything["counters"]} == counters
    assert everything["counters_hidden"] == 0
    assert list(doc) == sorted(doc)  # stable: keys sorted


def test_receipts_explain_kills_and_dlq_list_print_json(busy_ledger):
    url, _ = busy_ledger
    rows = _json(url, "receipts", "--limit", "100")
    assert len(rows) == 30 and {r["outcome"] for r in rows} == {"accept"}
    assert {r["work_key"] for r in rows} == {f"acme/github:acme/r{n}#1:review" for n in range(30)}
    chain = _json(url, "explain", "acme/github:acme/r7#1:review")
    assert chain["work_keys"] == ["acme/github:acme/r7#1:review"]
    assert [v["status"] for v in chain["versions"]] == ["accepted"]
    [kill] = _json(url, "kills")
    assert (kill["scope"], kill["target"], kill["actor"], kill["lifted_at"]) == ("tenant", "acme", "alice", None)
    assert _json(url, "dlq", "list", "--status", "all") == []


def _temporal(env) -> dict[str, str]:
    return {"TEMPORAL_ADDRESS": env.client.service_client.config.target_host,
            "TEMPORAL_NAMESPACE": env.client.namespace}


async def test_reconcile_prints_json(temporal_env, tmp_path):
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    result = await asyncio.to_thread(_json, url, "reconcile", "--grace-seconds", "0", **_temporal(temporal_env))
    assert result == {"open": 0, "raced": 0, "settled": []}


async def test_schedule_list_prints_json(dev_env, tmp_path):
    """Schedules need the dev server (the time-skipping one has none)."""
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    rows = await asyncio.to_thread(_json, url, "schedule", "list", **_temporal(dev_env))
    described = [row for row in rows if {"id", "paused", "spec", "in_config"} <= set(row)]
    assert described == rows and rows  # the configured maintenance schedules are listed, created or not


def test_shown_counts_what_it_leaves_out():
    st = Status(counters={"global": 3, "tenant:a": 0, "key:x": 5, "key:y": 1}, active_by_tenant={},
                queue=[], positions=[], breakers=[], dead_letters_open=0)
    view = shown(st, CapacityPlanner.unlimited(), top=2)
    assert [(c.key, c.active) for c in view.counters] == [("key:x", 5), ("global", 3)]
    assert view.counters_hidden == 2  # key:y past the top, tenant:a idle
    full = shown(st, CapacityPlanner.unlimited(), top=None)
    assert len(full.counters) == 4 and full.counters_hidden == 0
    assert json.loads(dumps(view))["counters"][0] == {"active": 5, "key": "key:x", "limit": None}
