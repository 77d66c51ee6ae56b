"""Record histories of the maintenance workflows for the replay test.

    .venv/bin/python -m tests.workflows.record_maintenance_histories NAME   # histories/NAME.json

Runs one ``PruneDeliveries`` workflow (the prune schedule's action) with the real worker
wiring on the time-skipping server, against a fresh SQLite ledger. Re-record only for a
deliberate, patched change of that workflow; keep the old files so the replay test proves
old histories still replay on the new code.
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
from sluicegate.schedules import PRUNE_DELIVERIES_SCHEDULE, maintenance_schedules
from tests.support.sims import FORGE_TOKEN, MODEL_KEY, Sims, settings_for
from worker import create_worker

OUT = Path(__file__).parent / "histories"
QUEUE = "record-maintenance"


async def main(name: str) -> None:
    server = str(Path(sys.executable).parent / "temporal-test-server")
    sims = Sims(ServerThread(create_forge_app(token=FORGE_TOKEN)).start(),
                ServerThread(create_model_app(api_key=MODEL_KEY)).start())
    tmp = Path(tempfile.mkdtemp())
    url = f"sqlite:///{tmp / 'ledger.sqlite'}"
    ledger.upgrade(url)
    settings = settings_for(sims, url, SLUICEGATE__ARTIFACTS__DIR=str(tmp / "artifacts"))
    action = maintenance_schedules(settings)[PRUNE_DELIVERIES_SCHEDULE].action
    env = await WorkflowEnvironment.start_time_skipping(test_server_existing_path=server)
    try:
        async with AsyncExitStack() as stack:
            worker = await create_worker(env.client, settings, stack, QUEUE, search_attributes=False)
            async with worker:
                handle = await env.client.start_workflow(action.workflow, *action.args, id=f"prune/{name}",
                                                         task_queue=QUEUE)
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
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "prune_recorded"))
