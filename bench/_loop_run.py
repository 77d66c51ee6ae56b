"""The three measurements of ``bench/loop_bench.py`` in turn, on one dev stack; each one's error is
collected (reported, exit status 1), not raised."""

from __future__ import annotations

import asyncio
import logging
import time
import traceback
from pathlib import Path

from bench._crash_calls import Batch, measure_batches
from bench._harness import stage
from bench._loop import Overhead
from bench._loop_overhead import measure_overhead
from bench._loop_restart import Restart, measure_restart
from sluicegate.devstack import DevStack

# Runtime options snapshotted into every work order at admission (API process) -- shortened so a
# model call cut off by the SIGKILL is retried within seconds instead of after 60 s / 10 s.
RESTART_OVERRIDES = {
    "SLUICEGATE__ACTIVITIES__MODEL_START_TO_CLOSE_SECONDS": "5",
    "SLUICEGATE__ACTIVITIES__TOOL_START_TO_CLOSE_SECONDS": "5",
    "SLUICEGATE__ACTIVITIES__TOOL_HEARTBEAT_SECONDS": "3",
}


class _DropUnadmittedOutcome(logging.Filter):
    """The overhead side's orders bypass intake, so record_run_outcome finds no admission and warns
    once per order (expected, like the naive side of mixed_stream.py); keep the output readable."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "not recorded: no such admission" not in str(record.msg)


logging.getLogger("temporalio.activity").addFilter(_DropUnadmittedOutcome())


def _log(line: str) -> None:
    print(line, flush=True)


async def run_measurements(a, stack: DevStack, tmp: Path, postgres: bool
               ) -> tuple[Overhead | None, Restart | None, list[Batch], list[str]]:
    errors: list[str] = []
    overhead = restart = None
    batches: list[Batch] = []
    if not a.no_overhead:
        try:
            stage("per-step overhead: AgentLoop vs. bare workflow")
            overhead = await measure_overhead(stack, tmp, a.rounds, a.orders, a.concurrency, a.warmup, _log,
                                              a.sims_in_process)
        except Exception as exc:  # noqa: BLE001 - reported, exit status 1
            traceback.print_exc()
            errors.append(f"overhead: {type(exc).__name__}: {exc}")
    if not a.no_restart:
        try:
            t = time.perf_counter()
            stage("worker SIGKILL mid-run: starting the worker")
            await asyncio.to_thread(stack.start_worker)
            _log(f"  worker process started in {time.perf_counter() - t:.1f}s")
            stage(f"worker SIGKILL mid-run: {a.reviews} reviews")
            restart = await measure_restart(stack, a.reviews, a.delay, a.timeout, _log)
        except Exception as exc:  # noqa: BLE001
            traceback.print_exc()
            errors.append(f"restart: {type(exc).__name__}: {exc}")
    if not a.no_crash_calls:
        try:
            if stack.processes.get("worker") is None or not stack.processes["worker"].alive():
                await asyncio.to_thread(stack.start_worker)
            stage(f"model calls per PR: {a.reviews} reviews per scenario")
            batches = await measure_batches(stack, a.reviews, a.delay, a.timeout, _log, after_answer=postgres)
        except Exception as exc:  # noqa: BLE001
            traceback.print_exc()
            errors.append(f"calls per PR: {type(exc).__name__}: {exc}")
    return overhead, restart, batches, errors
