"""Record histories of the agent workflow for the replay test.

    .venv/bin/python -m tests.workflows.record_histories NAME [SCENARIO]   # writes histories/NAME.json

Scenarios:

* ``two-orders`` (default): generation 1, then 2 while 1 runs (the second supersedes).
* ``late-older``: generation 2, then 1 arriving late (claimed ``superseded`` without a model call).
* ``cancel`` (or ``--cancel``): cancelled mid model call, one order pending.
* ``forged``: with ``temporal.require_admission`` on, an order intake admitted (it runs) and a
  forged one (no admission in the ledger: refused at its claim, no model call; patch
  ``claim-requires-admission``).
* ``claim-cancel``: generation 2 runs a slow model call while 1 (late) and 3 arrive; 2 is superseded
  at the step boundary, 1 is claimed ``superseded`` without a model call, 3 claims and runs, and the
  workflow is cancelled during 3's slow model call (both ``claim-order-at-start`` and
  ``cancel-is-an-outcome`` at work).
* ``policy-skip`` / ``policy-permit``: one order admitted under policy version ``v1`` while the
  worker runs ``v2`` (patch ``policy-first-step``): the re-check before its first step refuses it
  (``acme/*`` refused; the order ends ``skipped`` with a receipt) or permits it (it runs to ``done``).
* ``policy-fail-closed``: as ``policy-permit`` but the forge answers 503 for the pull request through
  every attempt (patch ``policy-first-step-fail-closed``): the last attempt refuses
  ``policy:recheck-unavailable`` and the order ends ``skipped`` without a model call.
* ``lean``: as ``forged`` but both orders genuine: generation 1 admitted and started, then generation 2
  admitted (which ends 1's admission ``superseded`` in the ledger) and signalled; 1's claim answers
  ``skip``, 2 claims and runs. Recorded for patch ``lean-loop-steps``: one patch marker, the claims,
  the policy re-check, the outcome record and the release as local-activity markers.
  ``agent_loop_lean_memo_changes_v1`` is the same scenario recorded under patch ``memo-changes-only`` (one
  marker for both; memo upserts after the first carry only the changed fields).
  ``agent_loop_lean_memo_changes_cancel_v1`` is ``claim-cancel`` under the same patch (the cancel's
  wind-down upserts, changed fields only). ``agent_loop_lean2_v1`` / ``agent_loop_lean2_cancel_v1`` are the
  same two scenarios under patch ``lean-loop-steps-2`` (no policy re-check for an unchanged policy; no
  cost upsert between the order's start and end, its steps being milliseconds apart);
  ``agent_loop_lean2_policy_permit_v1`` is ``policy-permit`` under it (the claim says the policy changed, so
  the re-check runs).
* ``artifact-reads``: one order whose diff is stored as an artifact (inline limit 500) and read back
  by the model with ``read_artifact`` in parts (patch ``read-artifact-tool``).

Re-record only for a deliberate, patched workflow change; keep the old files so the
replay test proves old histories still replay on the new code.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import AsyncIterator

import httpx
from temporalio.testing import WorkflowEnvironment

import ledger
from simulators import ServerThread
from simulators.forge import create_forge_app
from simulators.model import create_model_app
from tests.support.agent_runs import accept_in_ledger, start_order, work_order
from sluicegate.config.settings import Settings
from tests.support.sims import FORGE_TOKEN, MODEL_KEY, Sims, settings_for
from worker import create_worker
from workflows.cancellation import cancel_reason_text

OUT = Path(__file__).parent / "histories"


async def _model_calls_started(sims: Sims, n: int = 1) -> None:
    while httpx.get(f"{sims.model.base_url}/_sim/stats").json()["calls"] < n:
        await asyncio.sleep(0.05)


@asynccontextmanager
async def recording(task_queue: str, **env: str) -> AsyncIterator[tuple[WorkflowEnvironment, Settings, Sims]]:
    """The time-skipping server, the simulators, a fresh SQLite ledger and a real worker on
    ``task_queue``; everything is stopped and removed afterwards."""
    server = str(Path(sys.executable).parent / "temporal-test-server")
    sims = Sims(ServerThread(create_forge_app(token=FORGE_TOKEN)).start(),
                ServerThread(create_model_app(api_key=MODEL_KEY)).start())
    tmp = Path(tempfile.mkdtemp())
    url = f"sqlite:///{tmp / 'ledger.sqlite'}"
    ledger.upgrade(url)
    settings = settings_for(sims, url, SLUICEGATE__ARTIFACTS__DIR=str(tmp / "artifacts"), **env)
    temporal = await WorkflowEnvironment.start_time_skipping(test_server_existing_path=server)
    try:
        async with AsyncExitStack() as stack:
            async with await create_worker(temporal.client, settings, stack, task_queue, search_attributes=False):
                yield temporal, settings, sims
    finally:
        await temporal.shutdown()
        sims.forge.stop()
        sims.model.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def write(name: str, history) -> None:
    (OUT / f"{name}.json").write_text(history.to_json())
    print(f"wrote {len(history.events)} events")


NEWER_HEAD = "5c1e6b2d9a8f4e3c7b0a1d2e3f405162738495a6"
NEWEST_HEAD = "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a291807"
SCENARIOS = ("two-orders", "late-older", "cancel", "claim-cancel", "artifact-reads", "forged", "policy-skip",
             "policy-permit", "policy-fail-closed", "lean")
WORKFLOW_ID = "agent/acme/github:acme/api#42:review"


def _slow_model_calls(sims: Sims, *delays: float) -> None:
    """The next model calls answer after these delays, in order (one fault each)."""
    for delay in delays:
        httpx.post(f"{sims.model.base_url}/_sim/faults", json={"delay_seconds": delay, "times": 1})


async def main(name: str, scenario: str = "two-orders") -> None:
    if scenario not in SCENARIOS:
        raise SystemExit(f"unknown scenario {scenario!r}; one of {', '.join(SCENARIOS)}")
    if scenario == "artifact-reads":
        await _artifact_reads(name)
        return
    if scenario.startswith("policy-"):
        await _policy_first_step(name, refuse=scenario == "policy-skip", forge_down=scenario == "policy-fail-closed")
        return
    env_extra = {"SLUICEGATE__TEMPORAL__REQUIRE_ADMISSION": "true"} if scenario in ("forged", "lean") else {}
    async with recording("record-histories", **env_extra) as (env, settings, sims):
        older, newer = work_order(settings), work_order(settings, version=NEWER_HEAD, generation=2)
        if scenario == "forged":
            older, _ = accept_in_ledger(settings, older)
            handle = await start_order(env.client, "record-histories", older, workflow_id=WORKFLOW_ID)
            await start_order(env.client, "record-histories", newer, workflow_id=handle.id)
        elif scenario == "lean":
            older, _ = accept_in_ledger(settings, older)
            handle = await start_order(env.client, "record-histories", older, workflow_id=WORKFLOW_ID)
            newer, _ = accept_in_ledger(settings, newer)
            await start_order(env.client, "record-histories", newer, workflow_id=handle.id)
        elif scenario == "claim-cancel":
            _slow_model_calls(sims, 3, 60)
            handle = await start_order(env.client, "record-histories", newer, workflow_id=WORKFLOW_ID)
            await _model_calls_started(sims)
            for order in (older, work_order(settings, version=NEWEST_HEAD, generation=3)):
                await start_order(env.client, "record-histories", order, workflow_id=handle.id)
            await _model_calls_started(sims, 2)  # generation 3's slow call (1 made none)
            await handle.cancel(reason=cancel_reason_text("0" * 32, "recorder", "history for replay"))
        else:
            orders = [newer, older] if scenario == "late-older" else [older, newer]
            if scenario == "cancel":  # the first model call is slow; the second order waits behind it
                _slow_model_calls(sims, 30)
            handle = await start_order(env.client, "record-histories", orders[0], workflow_id=WORKFLOW_ID)
            if scenario == "cancel":
                await _model_calls_started(sims)
            await start_order(env.client, "record-histories", orders[1], workflow_id=handle.id)
            if scenario == "cancel":
                await handle.cancel(reason=cancel_reason_text("0" * 32, "recorder", "history for replay"))
        try:
            await handle.result()
        except Exception as exc:  # noqa: BLE001 - a cancelled run ends in WorkflowFailureError
            print(f"run ended: {exc!r}")
        write(name, await handle.fetch_history())


async def _artifact_reads(name: str) -> None:
    from workflows.contracts import TaskBudget

    diff = "diff --git a/big.py b/big.py\n@@ -0,0 +1,600 @@\n" + "".join(f"+line {i}\n" for i in range(600))
    env_vars = {"SLUICEGATE__ARTIFACTS__INLINE_LIMIT_CHARS": "500", "SLUICEGATE__ARTIFACTS__READ_MAX_CHARS": "1500"}
    async with recording("record-histories", **env_vars) as (env, settings, sims):
        httpx.post(f"{sims.forge.base_url}/_sim/pulls/acme/api/42", json={"diff": diff}).raise_for_status()
        order = work_order(settings, budget=TaskBudget(max_steps=10, max_total_tokens=200_000, max_usd=5.0))
        handle = await start_order(env.client, "record-histories", order, workflow_id=WORKFLOW_ID)
        print(f"run ended: {(await handle.result()).orders[0].status}")
        write(name, await handle.fetch_history())


async def _policy_first_step(name: str, refuse: bool, forge_down: bool = False) -> None:
    from dataclasses import replace

    env_vars = {"SLUICEGATE__INTAKE__POLICY_VERSION": "v2",
                "SLUICEGATE__INTAKE__POLICY_REFUSE_REPOSITORIES": '["acme/*"]' if refuse else "[]"}
    async with recording("record-histories", **env_vars) as (env, settings, sims):
        order, _ = accept_in_ledger(settings, work_order(settings))
        if forge_down:
            httpx.post(f"{sims.forge.base_url}/_sim/faults", json={
                "method": "GET", "path": "/api/pulls/42$", "status": 503, "times": 1000}).raise_for_status()
        handle = await start_order(env.client, "record-histories", replace(order, policy_version="v1"),
                                   workflow_id=WORKFLOW_ID)
        print(f"run ended: {(await handle.result()).orders[0].status}")
        write(name, await handle.fetch_history())


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    asyncio.run(main(args[0] if args else "agent_loop_recorded",
                     "cancel" if "--cancel" in sys.argv else (args[1] if len(args) > 1 else "two-orders")))
