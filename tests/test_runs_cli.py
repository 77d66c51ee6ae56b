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
from tests.support.agent_runs import accept_in_ledger, admit_in_ledger, mark_admitted, work_order
from tests.support.sims import settings_for
from workflows.contracts import AGENT_WORKFLOW, AgentLoopStart

ROOT = Path(__file__).resolve().parents[1]


async def _starter(temporal_env, url: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SLUICEGATE_LEDGER_URL": url, "COLUMNS": "200",
           "TEMPORAL_ADDRESS": temporal_env.client.service_client.config.target_host,
           "TEMPORAL_NAMESPACE": temporal_env.client.namespace}
    return await asyncio.to_thread(subprocess.run, [sys.executable, str(ROOT / "starter.py"), *args], env=env,
                                   capture_output=True, text=True, timeout=120)


async def test_cancel_without_a_running_workflow_is_recorded_and_exits_1(temporal_env, ledger_url):
    key = f"acme/github:acme/api#{uuid.uuid4().int % 10**8}:review"
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


async def test_cancel_refuses_a_key_without_its_tenant(temporal_env, ledger_url):
    key = f"github:acme/api#{uuid.uuid4().int % 10**8}:review"
    done = await _starter(temporal_env, ledger_url, "cancel", key, "--actor", "alice", "--reason", "r")
    assert done.returncode == 2 and "start with their tenant" in " ".join((done.stdout + done.stderr).split())
    engine = ledger.make_engine(ledger_url)
    assert ledger.CancelRequests(engine).for_work_key(key) == []
    engine.dispose()


async def test_cancel_reaches_a_run_admitted_before_the_tenancy_upgrade(temporal_env, sims, ledger_url, task_queue):
    """The ledger holds today's key; the run still runs under its old workflow id (agent/github:...)."""
    settings = settings_for(sims, ledger_url)
    order, decision = accept_in_ledger(settings, work_order(settings, number=uuid.uuid4().int % 10**8,
                                                            version=uuid.uuid4().hex + "0" * 8))
    legacy = order.work_key.split("/", 1)[1]
    # No worker polls this queue: the old run stays open until cancelled.
    handle = await temporal_env.client.start_workflow(AGENT_WORKFLOW, AgentLoopStart(legacy, "acme"),
                                                      id=f"agent/{legacy}", task_queue=task_queue)
    mark_admitted(settings, decision, handle.id, handle.result_run_id)
    try:
        done = await _starter(temporal_env, ledger_url, "cancel", order.work_key, "--actor", "alice",
                              "--reason", "wrong pull request", "--wait-seconds", "0")
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"cancel sent to agent/{legacy}" in " ".join(done.stdout.split())
        engine = ledger.make_engine(ledger_url)
        [request] = ledger.CancelRequests(engine).for_work_key(order.work_key)
        engine.dispose()
        assert (request.workflow_id, request.status, request.run_id) == (handle.id, "sent", handle.result_run_id)
    finally:
        await handle.terminate("test over")
