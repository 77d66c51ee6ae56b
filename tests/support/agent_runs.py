"""Run the real agent workflow with the real worker wiring against the simulators."""

from __future__ import annotations

import uuid
from contextlib import AsyncExitStack

from temporalio.client import Client, WorkflowHandle

from sluicegate.config import Settings
from worker import create_worker
from workflows.contracts import (
    AGENT_WORKFLOW, WORK_ORDER_SIGNAL, AgentLoopResult, AgentLoopStart, Price, RuntimeOptions, TaskBudget,
    WorkOrder,
)

PR42_HEAD = "ef9d10e0c793feda607897bea014358f22d8b670"


def work_order(settings: Settings, *, search_attributes: bool = False, owner="acme", repo="api", number=42, version=PR42_HEAD, generation=1,
               budget: TaskBudget | None = None, **runtime) -> WorkOrder:
    price = settings.model.prices[settings.model.name]
    rt = RuntimeOptions(**{**settings.activities.model_dump(), "search_attributes": search_attributes, **runtime})
    key = f"github:{owner}/{repo}#{number}:review"
    return WorkOrder(work_key=key, tenant="acme", owner=owner, repo=repo, number=number, input_version=version,
                     generation=generation, trigger_kind="event", source="github", receipt_id=uuid.uuid4().hex,
                     model=settings.model.name, price=Price(**price.model_dump()),
                     budget=budget or TaskBudget(**settings.budgets.per_task.model_dump()), runtime=rt)


def admit_in_ledger(settings: Settings, work_key: str, *versions: str) -> list[int]:
    """Accept each version through the ledger's intake transaction, as intake would (each bumps the
    work key's generation); returns the generations."""
    from datetime import UTC, datetime

    import ledger
    from intake.decision import Outcome, Reason
    from intake.envelope import TriggerKind
    from intake.receipts import ReceiptDraft

    engine = ledger.make_engine(settings.ledger_url())
    store = ledger.SqlIntakeStore(engine)
    generations = []
    for version in versions:
        decided = store.decide(ReceiptDraft(outcome=Outcome.ACCEPT, reason=Reason.ADMITTED, message="",
                                            source="github", trigger_kind=TriggerKind.EVENT,
                                            received_at=datetime.now(UTC), delivery_id=uuid.uuid4().hex,
                                            work_key=work_key, input_version=version, tenant="acme"))
        generations.append(decided.generation)
    engine.dispose()
    return generations


async def start_order(client: Client, task_queue: str, order: WorkOrder, workflow_id: str | None = None
                      ) -> WorkflowHandle:
    return await client.start_workflow(
        AGENT_WORKFLOW, AgentLoopStart(order.work_key, order.tenant),
        id=workflow_id or f"agent/{order.work_key}/{uuid.uuid4().hex[:8]}", task_queue=task_queue,
        start_signal=WORK_ORDER_SIGNAL, start_signal_args=[order], result_type=AgentLoopResult)


async def run_orders(client: Client, settings: Settings, task_queue: str, *orders: WorkOrder) -> AgentLoopResult:
    """Start a worker, signal-with-start each order into one workflow, return its result."""
    async with AsyncExitStack() as stack:
        worker = await create_worker(client, settings, stack, task_queue)
        async with worker:
            handle = await start_order(client, task_queue, orders[0])
            for order in orders[1:]:
                await start_order(client, task_queue, order, workflow_id=handle.id)
            return await handle.result()


__all__ = ["PR42_HEAD", "admit_in_ledger", "run_orders", "start_order", "work_order"]
