"""Run the real agent workflow with the real worker wiring against the simulators."""

from __future__ import annotations

import uuid
from contextlib import AsyncExitStack
from dataclasses import replace
from datetime import UTC, datetime

import httpx

from temporalio.client import Client, WorkflowHandle

from intake.envelope import PullRequestRef
from intake.identity import review_work_key
from sluicegate.config.settings import Settings
from tests.support.sims import FORGE_TOKEN
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
    key = review_work_key("acme", PullRequestRef(owner, repo, number))
    return WorkOrder(work_key=key, tenant="acme", owner=owner, repo=repo, number=number, input_version=version,
                     generation=generation, trigger_kind="event", source="github", receipt_id=uuid.uuid4().hex,
                     model=settings.model.name, price=Price(**price.model_dump()),
                     budget=budget or TaskBudget(**settings.budgets.per_task.model_dump()), runtime=rt)


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


def _accept(engine, work_key: str, version: str, source: str = "github", tenant: str = "acme"):
    """Intake's accept transaction for one version (receipt, generation bump, version ``accepted``)."""
    from intake.decision import Outcome, Reason
    from intake.envelope import TriggerKind
    from intake.receipts import ReceiptDraft
    from ledger import SqlIntakeStore

    return SqlIntakeStore(engine).decide(ReceiptDraft(
        outcome=Outcome.ACCEPT, reason=Reason.ADMITTED, message="", source=source,
        trigger_kind=TriggerKind.EVENT, received_at=datetime.now(UTC), delivery_id=uuid.uuid4().hex,
        work_key=work_key, input_version=version, tenant=tenant))


def accept_in_ledger(settings: Settings, order: WorkOrder):
    """Accept ``order``'s version in the ledger as intake would (receipt, generation, version
    ``accepted``); returns the order carrying that receipt and generation, and the decision."""
    from ledger import make_engine

    engine = make_engine(settings.ledger_url())
    decision = _accept(engine, order.work_key, order.input_version, order.source, order.tenant)
    engine.dispose()
    return replace(order, generation=decision.generation, receipt_id=decision.receipt_id), decision


def accept_versions(settings: Settings, work_key: str, *versions: str) -> list[int]:
    """Accept each version of ``work_key`` as intake would (each bumps the work key's generation;
    the versions stay ``accepted``); returns the generations."""
    from ledger import make_engine

    engine = make_engine(settings.ledger_url())
    generations = [_accept(engine, work_key, version).generation for version in versions]
    engine.dispose()
    return generations


def mark_admitted(settings: Settings, decision, workflow_id: str, run_id: str | None) -> None:
    from ledger import SqlIntakeStore, make_engine

    engine = make_engine(settings.ledger_url())
    SqlIntakeStore(engine).mark_admitted(decision, workflow_id, run_id)
    engine.dispose()


def admit_in_ledger(settings: Settings, order: WorkOrder) -> WorkOrder:
    """Accept and admit ``order``'s version in the ledger (run id unknown); returns the order
    carrying the admission's receipt and generation."""
    from intake.identity import workflow_id_for

    order, decision = accept_in_ledger(settings, order)
    mark_admitted(settings, decision, workflow_id_for(order.work_key), None)
    return order


def copy_of_pr42(sims) -> tuple[str, str]:
    """acme/api#42 (head and diff) under a fresh owner, so a test's work key is its own even on a
    shared ledger; returns (owner, head sha)."""
    auth = {"Authorization": f"Bearer {FORGE_TOKEN}"}
    url = f"{sims.forge.base_url}/repos/acme/api/pulls/42"
    pull = httpx.get(url, headers=auth).raise_for_status().json()
    diff = httpx.get(url, headers={**auth, "Accept": "application/vnd.github.diff"}).raise_for_status().text
    owner = f"o{uuid.uuid4().hex[:8]}"
    sims.forge_ctl("POST", f"/pulls/{owner}/api/42", json={"head_sha": pull["head"]["sha"], "diff": diff,
                                                           "title": pull["title"]})
    return owner, pull["head"]["sha"]


__all__ = ["PR42_HEAD", "accept_in_ledger", "accept_versions", "admit_in_ledger", "copy_of_pr42", "mark_admitted",
           "run_orders", "start_order", "work_order"]
