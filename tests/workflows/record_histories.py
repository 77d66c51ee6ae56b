"""Record histories of the agent workflow for the replay test.

    .venv/bin/python -m tests.workflows.record_histories NAME            # two orders, the second supersedes
    .venv/bin/python -m tests.workflows.record_histories NAME --cancel   # cancelled mid model call, one pending

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
from tests.support.agent_runs import start_order, work_order
from sluicegate.config import Settings
from tests.support.sims import FORGE_TOKEN, MODEL_KEY, Sims, settings_for
from worker import create_worker
from workflows.cancellation import cancel_reason_text

OUT = Path(__file__).parent / "histories"


async def _model_call_started(sims: Sims) -> None:
    while httpx.get(f"{sims.model.base_url}/_sim/stats").json()["calls"] == 0:
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


async def main(name: str, cancel: bool = False) -> None:
    async with recording("record-histories") as (env, settings, sims):
        if cancel:  # the first model call is slow; the second order waits behind it
            httpx.post(f"{sims.model.base_url}/_sim/faults", json={"delay_seconds": 30, "times": 1})
        handle = await start_order(env.client, "record-histories", work_order(settings),
                                   workflow_id="agent/acme/github:acme/api#42:review")
        if cancel:
            await _model_call_started(sims)
        await start_order(env.client, "record-histories",
                          work_order(settings, version="5c1e6b2d9a8f4e3c7b0a1d2e3f405162738495a6", generation=2),
                          workflow_id=handle.id)
        if cancel:
            await handle.cancel(reason=cancel_reason_text("0" * 32, "recorder", "history for replay"))
        try:
            await handle.result()
        except Exception as exc:  # noqa: BLE001 - a cancelled run ends in WorkflowFailureError
            print(f"run ended: {exc!r}")
        write(name, await handle.fetch_history())


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    asyncio.run(main(args[0] if args else "agent_loop_recorded", cancel="--cancel" in sys.argv))
