"""The two phases of the mixed-stream benchmark, on one dev stack with a worker.

* **intake**: the stream's signed deliveries go to ``POST /webhooks/github`` (the real API
  process) at the given concurrency while the worker runs whatever is admitted; then we
  wait until every admitted work version is finished and read the ledger, Temporal and
  both simulators.
* **naive** (``bench/_mixed_naive.py``): both simulators are reset, and for every delivery of
  the same stream one ``AgentLoop`` workflow is started directly on a pull request of its own
  -- "no intake"; we wait for all of them and read the simulators again.
"""

from __future__ import annotations

import asyncio
from collections import Counter

import httpx

import ledger
from bench._common import now
from bench._e2e import CpuMeter
from bench._mixed_observe import Log, agent_loops, read_receipts, wait_versions
from bench._mixed_results import IntakeResult, Phase
from bench._mixed_send import Endpoints, send_stream, setup_pulls, signed_bodies, sim_state
from bench._stream import Stream
from sluicegate.devstack import DevStack
from sluicegate.temporal.client import connect


class CpuClock(CpuMeter):
    """CPU seconds per stack process (and this process) since a snapshot."""

    def since(self, before: dict[str, float]) -> dict[str, float]:
        after = self.snapshot()
        return {n: after[n] - before[n] for n in after}


async def intake_phase(stack: DevStack, stream: Stream, concurrency: int, timeout: float, log: Log
                       ) -> IntakeResult:
    s = stack.settings
    ep = Endpoints(s)
    cpu = CpuClock(stack)
    engine = ledger.make_engine(s.ledger_url())
    client = await connect(s)
    limits = httpx.Limits(max_connections=concurrency * 2, max_keepalive_connections=concurrency * 2)
    try:
        async with httpx.AsyncClient(timeout=60, limits=limits) as setup:  # own pool: bench/_e2e.py says why
            await setup_pulls(setup, ep, stream.pulls, final=False, concurrency=concurrency)
        async with httpx.AsyncClient(timeout=60, limits=limits) as http:
            bodies = signed_bodies(stream, s.sources["github"].secret)
            log(f"  set-up: {len(stream.pulls)} open pull requests on the forge simulator, "
                f"{len(stream.items)} signed deliveries")
            before = cpu.snapshot()
            t0 = now()
            answers, send_seconds = await send_stream(http, ep, stream.items, bodies, concurrency)
            cats = Counter(a.category for a in answers)
            log(f"  intake: {len(answers)} deliveries answered in {send_seconds:.2f}s "
                f"({len(answers) / send_seconds:.1f}/s): " + ", ".join(f"{k} {v}" for k, v in sorted(cats.items())))
            admitted = sum(a.category == "accept" for a in answers)
            versions = await wait_versions(engine, admitted, timeout, log)
            finished = now() - t0
            log(f"  intake: {len(versions)} admitted runs finished {finished:.1f}s after the first delivery "
                f"({Counter(v.status for v in versions)})")
            runs = {(v.workflow_id, v.run_id) for v in versions}
            executions, running = await agent_loops(client, len(runs))
            if running:
                log(f"  WARNING: {running} AgentLoop executions still running after every version finished")
            phase = Phase("intake", finished, executions=executions, cpu=cpu.since(before))
            phase.model, phase.comments = await sim_state(http, ep)
            receipts = await asyncio.to_thread(read_receipts, engine)
        return IntakeResult(phase, answers, send_seconds, versions, receipts, {w for w, _ in executions})
    finally:
        engine.dispose()
