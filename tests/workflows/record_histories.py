"""Record histories of the agent workflow for the replay test.

    .venv/bin/python -m tests.workflows.record_histories NAME   # writes histories/NAME.json

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

from temporalio.testing import WorkflowEnvironment

import ledger
from simulators import ServerThread
from simulators.forge import create_forge_app
from simulators.model import create_model_app
from tests.support.agent_runs import start_order, work_order
from sluicegate.config import Settings
from tests.support.sims import FORGE_TOKEN, MODEL_KEY, Sims, settings_for
from worker import create_worker

OUT = Path(__file__).parent / "histories"


@asynccontextmanager
async def recording(task_queue: str, **env: str) -> AsyncIterator[tuple[WorkflowEnvironment, Settings]]:
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
                yield temporal, settings
    finally:
        await temporal.shutdown()
        sims.forge.stop()
        sims.model.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def write(name: str, history) -> None:
    (OUT / f"{name}.json").write_text(history.to_json())
    print(f"wrote {len(history.events)} events")


async def main(name: str) -> None:
    async with recording("record-histories") as (env, settings):
        handle = await start_order(env.client, "record-histories", work_order(settings),
                                   workflow_id="agent/github:acme/api#42:review")
        await start_order(env.client, "record-histories",
                          work_order(settings, version="5c1e6b2d9a8f4e3c7b0a1d2e3f405162738495a6", generation=2),
                          workflow_id=handle.id)
        await handle.result()
        write(name, await handle.fetch_history())


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "agent_loop_recorded"))
