"""Record histories of the agent workflow for the replay test.

    .venv/bin/python -m tests.workflows.record_histories NAME [SCENARIO]   # writes histories/NAME.json

Scenarios: ``two-orders`` (default: generation 1, then 2 while 1 runs) and ``late-older``
(generation 2, then 1 arriving late: claimed ``superseded`` without a model call).

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

from temporalio.testing import WorkflowEnvironment

import ledger
from simulators import ServerThread
from simulators.forge import create_forge_app
from simulators.model import create_model_app
from tests.support.agent_runs import start_order, work_order
from tests.support.sims import FORGE_TOKEN, MODEL_KEY, Sims, settings_for
from worker import create_worker

OUT = Path(__file__).parent / "histories"


NEWER_HEAD = "5c1e6b2d9a8f4e3c7b0a1d2e3f405162738495a6"


async def main(name: str, scenario: str = "two-orders") -> None:
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
                orders = [work_order(settings), work_order(settings, version=NEWER_HEAD, generation=2)]
                if scenario == "late-older":
                    orders.reverse()
                handle = await start_order(env.client, "record-histories", orders[0],
                                           workflow_id="agent/github:acme/api#42:review")
                await start_order(env.client, "record-histories", orders[1], workflow_id=handle.id)
                await handle.result()
                history = await handle.fetch_history()
        (OUT / f"{name}.json").write_text(history.to_json())
        print(f"wrote {len(history.events)} events")
    finally:
        await env.shutdown()
        sims.forge.stop()
        sims.model.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main(*(sys.argv[1:3] or ["agent_loop_recorded"])))
