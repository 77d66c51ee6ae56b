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
from contextlib import AsyncExitStack
from pathlib import Path

import httpx
from temporalio.testing import WorkflowEnvironment

import ledger
from simulators import ServerThread
from simulators.forge import create_forge_app
from simulators.model import create_model_app
from tests.support.agent_runs import start_order, work_order
from tests.support.sims import FORGE_TOKEN, MODEL_KEY, Sims, settings_for
from worker import create_worker
from workflows.cancellation import cancel_reason_text

OUT = Path(__file__).parent / "histories"


async def _model_call_started(sims: Sims) -> None:
    while httpx.get(f"{sims.model.base_url}/_sim/stats").json()["calls"] == 0:
        await asyncio.sleep(0.05)


async def main(name: str, cancel: bool = False) -> None:
    server = str(Path(sys.executable).parent / "temporal-test-server")
    sims = Sims(ServerThread(create_forge_app(token=FORGE_TOKEN)).start(),
                ServerThread(create_model_app(api_key=MODEL_KEY)).start())
    tmp = Path(tempfile.mkdtemp())
    url = f"sqlite:///{tmp / 'ledger.sqlite'}"
    ledger.upgrade(url)
    settings = settings_for(sims, url)
    env = await WorkflowEnvironment.start_time_skipping(test_server_existing_path=server)
    try:
        async with AsyncExitStack() as stack:
            worker = await create_worker(env.client, settings, stack, "record-histories")
            async with worker:
                if cancel:  # the first model call is slow; the second order waits behind it
                    httpx.post(f"{sims.model.base_url}/_sim/faults", json={"delay_seconds": 30, "times": 1})
                first = work_order(settings)
                handle = await start_order(env.client, "record-histories", first,
                                           workflow_id="agent/github:acme/api#42:review")
                if cancel:
                    await _model_call_started(sims)
                await start_order(env.client, "record-histories",
                                  work_order(settings, version="5c1e6b2d9a8f4e3c7b0a1d2e3f405162738495a6",
                                             generation=2), workflow_id=handle.id)
                if cancel:
                    await handle.cancel(reason=cancel_reason_text("0" * 32, "recorder", "history for replay"))
                try:
                    await handle.result()
                except Exception as exc:  # noqa: BLE001 - a cancelled run ends in WorkflowFailureError
                    print(f"run ended: {exc!r}")
                history = await handle.fetch_history()
        (OUT / f"{name}.json").write_text(history.to_json())
        print(f"wrote {len(history.events)} events")
    finally:
        await env.shutdown()
        sims.forge.stop()
        sims.model.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    asyncio.run(main(args[0] if args else "agent_loop_recorded", cancel="--cancel" in sys.argv))
