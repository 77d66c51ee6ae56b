"""The mixed-stream bench's naive phase: one ``AgentLoop`` workflow per delivery, no intake.

Both simulators are reset. Every delivery of the stream then gets a pull request of its own on the
forge (a copy of its pull request at that one's final head, number ``NAIVE_PR_BASE + index``), so
its work key is its own and nothing -- generations, supersede, the side-effect ledger -- dedupes
it: every delivery is reviewed, as by a team that starts one run per webhook.

Workers run only orders that match an admission in the ledger whose work key their tenant and pull
request make (``temporal.require_admission``, ``workflows/claims.py``). A deployment without
intake would have no such check; the bench does not weaken it but writes, before the phase's
clock starts, the admission a run needs: intake's accept transaction and ``mark_admitted``
(``SqlIntakeStore``, as ``tests/support/agent_runs.admit_in_ledger`` does). Before this, the
naive orders carried a made-up key and no admission, and every one ended ``refused`` with no
model call.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace
from datetime import UTC, datetime

import httpx

import ledger
from bench._common import now
from bench._mixed import CpuClock
from bench._mixed_observe import Log, agent_loops
from bench._mixed_results import NaiveResult, Phase
from bench._mixed_send import Endpoints, setup_pulls, sim_state
from bench._stream import Item, Pull, Stream
from intake.decision import Outcome, Reason
from intake.envelope import PullRequestRef, TriggerKind
from intake.identity import review_work_key
from intake.receipts import ReceiptDraft
from sluicegate.config.settings import Settings
from sluicegate.devstack import DevStack
from sluicegate.temporal.client import connect
from workflows.contracts import (
    AGENT_WORKFLOW, WORK_ORDER_SIGNAL, AgentLoopResult, AgentLoopStart, Price, RuntimeOptions, TaskBudget, WorkOrder,
)

NAIVE_PR_BASE = 100_000
"""Delivery ``i`` is reviewed on pull request ``NAIVE_PR_BASE + i`` of its repository (a copy)."""


def naive_pulls(stream: Stream) -> list[Pull]:
    """One pull request per delivery: its own pull request's final head (and the bench's diff)."""
    final = {p.pr: p.heads[-1] for p in stream.pulls}
    return [Pull(it.owner, it.repo, NAIVE_PR_BASE + it.index, [final[it.pr]]) for it in stream.items]


def naive_order(s: Settings, it: Item, tenant: str) -> WorkOrder:
    """Delivery ``it``'s work order on its own pull request, built as intake's admitter builds one
    (generation and receipt are filled in by :func:`admit`)."""
    price = s.model.prices[s.model.name]
    rt = RuntimeOptions(**{**s.activities.model_dump(), "search_attributes": False})
    number = NAIVE_PR_BASE + it.index
    return WorkOrder(work_key=review_work_key(tenant, PullRequestRef(it.owner, it.repo, number)), tenant=tenant,
                     owner=it.owner, repo=it.repo, number=number, input_version=it.sha, generation=0,
                     trigger_kind="event", source="github", receipt_id="", model=s.model.name,
                     price=Price(**price.model_dump()), budget=TaskBudget(**s.budgets.per_task.model_dump()),
                     delivery_id=it.delivery_id, runtime=rt)


def admit(store: ledger.SqlIntakeStore, order: WorkOrder, workflow_id: str) -> WorkOrder:
    """Record ``order``'s admission as intake's accept would; the order carries its receipt and generation."""
    d = store.decide(ReceiptDraft(
        outcome=Outcome.ACCEPT, reason=Reason.ADMITTED, message="naive baseline", source=order.source,
        trigger_kind=TriggerKind.EVENT, received_at=datetime.now(UTC), delivery_id=f"naive-{uuid.uuid4()}",
        work_key=order.work_key, input_version=order.input_version, tenant=order.tenant))
    if d.outcome != Outcome.ACCEPT or d.generation is None:
        raise RuntimeError(f"naive admission of {order.work_key}@{order.input_version}: {d.outcome}/{d.reason}")
    store.mark_admitted(d, workflow_id, None)
    return replace(order, generation=d.generation, receipt_id=d.receipt_id, policy_version=d.policy_version)


def admit_all(s: Settings, orders: list[WorkOrder]) -> list[tuple[str, WorkOrder]]:
    engine = ledger.make_engine(s.ledger_url())
    try:
        store = ledger.SqlIntakeStore(engine, policy=s.intake.policy())
        return [(wid, admit(store, o, wid)) for wid, o in ((f"naive/{o.work_key}", o) for o in orders)]
    finally:
        engine.dispose()


async def naive_phase(stack: DevStack, stream: Stream, concurrency: int, timeout: float, log: Log,
                      intake_executions: set[tuple[str, str]]) -> NaiveResult:
    s = stack.settings
    ep, cpu, client = Endpoints(s), CpuClock(stack), await connect(s)
    tenant = s.sources["github"].tenant
    async with httpx.AsyncClient(timeout=60) as http:
        for url in (f"{ep.model}/_sim/reset", f"{ep.forge}/_sim/reset"):
            (await http.post(url)).raise_for_status()
        await setup_pulls(http, ep, naive_pulls(stream), final=True, concurrency=concurrency)
        stats, comments = await sim_state(http, ep)
        if stats.get("calls") or comments:
            raise RuntimeError(f"simulators not reset: {stats.get('calls')} model calls, {len(comments)} comments")
        orders = await asyncio.to_thread(admit_all, s, [naive_order(s, it, tenant) for it in stream.items])
        log(f"  naive: simulators reset, {len(orders)} pull requests (one per delivery) and admissions recorded")
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
