"""The two phases of the mixed-stream benchmark, on one dev stack with a worker.

* **intake**: the stream's signed deliveries go to ``POST /webhooks/github`` (the real API
  process) at the given concurrency while the worker runs whatever is admitted; then we
  wait until every admitted work version is finished and read the ledger, Temporal and
  both simulators.
* **naive**: both simulators are reset (the forge's pull requests are re-created), and
  for every delivery of the same stream one ``AgentLoop`` workflow is started directly
  with a work order of its own (unique work key suffix, generation 1) -- "no intake";
  we wait for all of them and read the simulators again.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter

import httpx

import ledger
from bench._common import now
from bench._e2e import CpuMeter
from bench._mixed_observe import Log, agent_loops, read_receipts, wait_versions
from bench._mixed_results import IntakeResult, NaiveResult, Phase
from bench._mixed_send import Endpoints, send_stream, setup_pulls, signed_bodies, sim_state
from bench._stream import Item, Stream
from sluicegate.config.settings import Settings
from sluicegate.devstack import DevStack
from sluicegate.temporal.client import connect
from workflows.contracts import (
    AGENT_WORKFLOW, WORK_ORDER_SIGNAL, AgentLoopResult, AgentLoopStart, Price, RuntimeOptions, TaskBudget, WorkOrder,
)


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
        async with httpx.AsyncClient(timeout=60, limits=limits) as http:
            await setup_pulls(http, ep, stream.pulls, final=False, concurrency=concurrency)
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


def naive_order(s: Settings, it: Item, tenant: str) -> WorkOrder:
    """One work order per delivery, as ``tests/support/agent_runs.work_order`` builds them, with a
    work key of its own (suffix) so nothing -- not even the side-effect ledger -- dedupes it."""
    price = s.model.prices[s.model.name]
    rt = RuntimeOptions(**{**s.activities.model_dump(), "search_attributes": False})
    return WorkOrder(work_key=f"{it.work_key}~naive-{it.index:05d}", tenant=tenant, owner=it.owner, repo=it.repo,
                     number=it.number, input_version=it.sha, generation=1, trigger_kind="event", source="github",
                     receipt_id=uuid.uuid4().hex, model=s.model.name, price=Price(**price.model_dump()),
                     budget=TaskBudget(**s.budgets.per_task.model_dump()), delivery_id=it.delivery_id, runtime=rt)


async def naive_phase(stack: DevStack, stream: Stream, concurrency: int, timeout: float, log: Log,
                      intake_executions: set[tuple[str, str]]) -> NaiveResult:
    s = stack.settings
    ep = Endpoints(s)
    cpu = CpuClock(stack)
    client = await connect(s)
    tenant = s.sources["github"].tenant
    async with httpx.AsyncClient(timeout=60) as http:
        for url in (f"{ep.model}/_sim/reset", f"{ep.forge}/_sim/reset"):
            (await http.post(url)).raise_for_status()
        # The forge reset re-seeds its fixtures: our pull requests are gone. Re-create them (final heads).
        await setup_pulls(http, ep, stream.pulls, final=True, concurrency=concurrency)
        stats, comments = await sim_state(http, ep)
        if stats.get("calls") or comments:
            raise RuntimeError(f"simulators not reset: {stats.get('calls')} model calls, {len(comments)} comments")
        orders = [(f"naive/{o.work_key}", o) for o in (naive_order(s, it, tenant) for it in stream.items)]
        log(f"  naive: simulators reset, {len(stream.pulls)} pull requests re-created, {len(orders)} work orders")
        result = NaiveResult(Phase("naive"))
        handles, queue = [], iter(orders)

        async def starter() -> None:
            for wid, order in queue:
                try:
                    handles.append(await client.start_workflow(
                        AGENT_WORKFLOW, AgentLoopStart(order.work_key, order.tenant), id=wid,
                        task_queue=s.temporal.task_queue, start_signal=WORK_ORDER_SIGNAL,
                        start_signal_args=[order], result_type=AgentLoopResult))
                except Exception as exc:  # noqa: BLE001
                    result.errors.append(f"start {wid}: {type(exc).__name__}: {exc}"[:200])

        before = cpu.snapshot()
        t0 = now()
        await asyncio.gather(*(starter() for _ in range(concurrency)))
        result.starts, result.start_seconds = len(handles), now() - t0
        log(f"  naive: {len(handles)} workflows started in {result.start_seconds:.2f}s "
            f"({len(handles) / max(result.start_seconds, 1e-9):.1f}/s)")
        try:
            outcomes = await asyncio.wait_for(
                asyncio.gather(*(h.result() for h in handles), return_exceptions=True), timeout)
        except TimeoutError:
            raise TimeoutError(f"naive runs not finished after {timeout:.0f}s") from None
        result.phase.seconds_to_finish = now() - t0
        for h, out in zip(handles, outcomes, strict=True):
            if isinstance(out, BaseException):
                result.errors.append(f"{h.id}: {type(out).__name__}: {out}"[:200])
                continue
            for o in out.orders:
                result.statuses[o.status] += 1
                result.steps += o.steps
        log(f"  naive: {len(handles)} runs finished {result.phase.seconds_to_finish:.1f}s after the first start "
            f"({dict(result.statuses)})")
        result.phase.cpu = cpu.since(before)
        every, _ = await agent_loops(client, len(intake_executions) + len(handles))
        result.phase.executions = every - intake_executions
        result.phase.model, result.phase.comments = await sim_state(http, ep)
    return result
