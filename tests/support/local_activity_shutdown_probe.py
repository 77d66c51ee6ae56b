"""Run by tests/test_local_activity_shutdown.py in a process of its own (a panic of sdk-core's
background threads is printed to this process's stderr, after the worker is gone).

A workflow runs a local activity that fails (retryably) every attempt; the worker shuts down while
it is being retried, and the process stays up past the retry's timeout so any timer left armed
fires. ``--guarded`` registers ``activities.local_activity_shutdown.LocalActivityShutdown``; ``--grace S`` is the
worker's graceful shutdown window (default 0); ``--timeout S`` the local activity's start-to-close timeout
(default 5; the ledger's own local activities use 30).
Prints ``attempts=<n>`` (the activity ran) and ``done``.
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path

from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from activities.local_activity_shutdown import LocalActivityShutdown

TIMEOUT = timedelta(seconds=float(sys.argv[sys.argv.index("--timeout") + 1]) if "--timeout" in sys.argv else 5)
attempts: list[int] = []
failed_once = asyncio.Event()


@activity.defn(name="probe_ledger_write")
async def probe_ledger_write(arg: str) -> str:
    attempts.append(activity.info().attempt)
    await asyncio.to_thread(time.sleep, 1)  # a blocking ledger call, as the real ones are
    failed_once.set()
    raise RuntimeError("ledger busy")  # retryable, like a transient ledger error


@workflow.defn(name="LocalActivityShutdownProbe")
class Probe:
    @workflow.run
    async def run(self) -> str:
        return await workflow.execute_local_activity(
            "probe_ledger_write", "x", start_to_close_timeout=TIMEOUT,
            retry_policy=RetryPolicy(initial_interval=timedelta(seconds=1)), local_retry_threshold=timedelta(seconds=2))


async def main(guarded: bool, grace: float) -> None:
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=str(Path(sys.executable).parent / "temporal-test-server"))
    queue = f"la-shutdown-{uuid.uuid4().hex[:8]}"
    worker = Worker(env.client, task_queue=queue, workflows=[Probe], activities=[probe_ledger_write],
                    workflow_runner=UnsandboxedWorkflowRunner(), graceful_shutdown_timeout=timedelta(seconds=grace),
                    interceptors=[LocalActivityShutdown()] if guarded else [])
    async with worker:
        await env.client.start_workflow("LocalActivityShutdownProbe", id=queue, task_queue=queue)
        await asyncio.wait_for(failed_once.wait(), 60)
    await asyncio.sleep(TIMEOUT.total_seconds() * 2 + 1)  # past every timer the worker could have left armed
    await env.shutdown()
    print(f"attempts={len(attempts)}", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    asyncio.run(main("--guarded" in sys.argv, float(sys.argv[sys.argv.index("--grace") + 1]) if "--grace" in sys.argv else 0))
