"""Record histories of the maintenance workflows for the replay test.

    .venv/bin/python -m tests.workflows.record_maintenance_histories NAME   # histories/NAME.json

Runs one ``PruneDeliveries`` workflow (the prune schedule's action) with the real worker
wiring on the time-skipping server, against a fresh SQLite ledger. Re-record only for a
deliberate, patched change of that workflow; keep the old files so the replay test proves
old histories still replay on the new code.
"""

from __future__ import annotations

import asyncio
import sys

from sluicegate.temporal.schedules import PRUNE_DELIVERIES_SCHEDULE, maintenance_schedules
from tests.workflows.record_histories import recording, write

QUEUE = "record-maintenance"


async def main(name: str) -> None:
    async with recording(QUEUE) as (env, settings, _sims):
        action = maintenance_schedules(settings)[PRUNE_DELIVERIES_SCHEDULE].action
        handle = await env.client.start_workflow(action.workflow, *action.args, id=f"prune/{name}", task_queue=QUEUE)
        await handle.result()
        write(name, await handle.fetch_history())


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "prune_recorded"))
