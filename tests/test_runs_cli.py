"""`starter.py cancel` and `starter.py reconcile` as an operator runs them, against a real ledger
and a real Temporal server (the test environment's)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from pathlib import Path

import ledger
from tests.support.agent_runs import admit_in_ledger, work_order
from tests.support.sims import settings_for

ROOT = Path(__file__).resolve().parents[1]


async def _starter(temporal_env, url: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SLUICEGATE_LEDGER_URL": url, "COLUMNS": "200",
           "TEMPORAL_ADDRESS": temporal_env.client.service_client.config.target_host,
           "TEMPORAL_NAMESPACE": temporal_env.client.namespace}
    return await asyncio.to_thread(subprocess.run, [sys.executable, str(ROOT / "starter.py"), *args], env=env,
                                   capture_output=True, text=True, timeout=120)


async def test_cancel_without_a_running_workflow_is_recorded_and_exits_1(temporal_env, ledger_url):
    key = f"github:acme/api#{uuid.uuid4().int % 10**8}:review"
    done = await _starter(temporal_env, ledger_url, "cancel", key, "--actor", "alice", "--reason", "not needed")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "not cancelled (no-run)" in done.stdout
    engine = ledger.make_engine(ledger_url)
    [request] = ledger.CancelRequests(engine).for_work_key(key)
    engine.dispose()
    assert (request.actor, request.reason, request.status) == ("alice", "not needed", "no-run")


async def test_reconcile_settles_a_version_whose_run_does_not_exist(temporal_env, sims, ledger_url):
    settings = settings_for(sims, ledger_url)
    order = admit_in_ledger(settings, work_order(settings, number=uuid.uuid4().int % 10**8,
                                                 version=uuid.uuid4().hex + "0" * 8))
    done = await _starter(temporal_env, ledger_url, "reconcile", "--grace-seconds", "0")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"settled {order.work_key}@{order.input_version}: failed" in " ".join(done.stdout.split())
    engine = ledger.make_engine(ledger_url)
    letters = [d for d in ledger.DeadLetters(engine).list(status=None, limit=1000) if d.work_key == order.work_key]
    engine.dispose()
    assert [letter.reason for letter in letters] == [
        "run not found in Temporal (deleted, or past the namespace's retention)"]
