"""Admission into Temporal with signal-with-start.

The workflow id is derived from the work key, so every admission of one work key lands
in the same workflow: a new run is started if none is open, otherwise the work order is
signalled into the open one (a start's summary and memo — pull request, title, tenant, trigger,
receipt — are then ignored: the workflow upserts the memo itself). The work order snapshots the budget, price table and
activity options in force at admission, so a config change never alters a running order.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio.client import Client
from temporalio.common import Priority

from intake.capacity import CapacityPlanner

from intake.identity import workflow_id_for
from intake.ports import Admission
from sluicegate.config.settings import Settings
from workflows import search_attributes as sa
from intake.hygiene import display_title
from workflows.run_memo import memo_at_start, summary_for
from workflows.contracts import (
    AGENT_WORKFLOW, WORK_ORDER_SIGNAL, AgentLoopStart, Price, RuntimeOptions, TaskBudget, WorkOrder,
)


def work_order_for(admission: Admission, settings: Settings, search_attributes: bool = True) -> WorkOrder:
    d, env, cand = admission.decision, admission.envelope, admission.candidate
    if d.input_version is None or d.generation is None:  # an accepted decision carries both
        raise ValueError(f"decision {d.receipt_id} has no input version or generation to admit")
    price = settings.model.prices.get(settings.model.name)
    if price is None:
        raise ValueError(f"no price configured for model {settings.model.name!r} (model.prices)")
    budget = settings.budgets.per_task
    act = settings.activities
    return WorkOrder(
        work_key=cand.work_key, tenant=cand.tenant, owner=cand.target.owner, repo=cand.target.repo,
        number=cand.target.number, input_version=d.input_version, generation=d.generation,
        trigger_kind=str(env.trigger_kind), source=env.source, receipt_id=d.receipt_id, model=settings.model.name,
        price=Price(**price.model_dump()), budget=TaskBudget(**budget.model_dump()),
        delivery_id=env.id, actor=env.actor, policy_version=d.policy_version or settings.intake.policy_version,
        runtime=RuntimeOptions(search_attributes=search_attributes, **act.model_dump()),
        # A forced re-run (an admin's, or a policy change's) must post its review again, not find the
        # first run's as done.
        effect_discriminator=f"rerun-gen{d.generation}" if env.override or d.override else "",
        title=display_title(cand.title))


# An unreachable Temporal must not hold the webhook request open: the receipt is already
# committed, so a failed admission is safe to leave for the outbox.
ADMISSION_RPC_TIMEOUT = timedelta(seconds=10)


class TemporalAdmitter:
    def __init__(self, client: Client, settings: Settings, search_attributes: bool = True) -> None:
        self._client = client
        self._settings = settings
        self._search_attributes = search_attributes
        self._planner = CapacityPlanner(settings.capacity.limits(settings.sources))

    def priority_for(self, admission: Admission) -> Priority:
        """Temporal's task-queue priority (1 first .. 5 last) and fairness by tenant: the run's
        workflow and activity tasks (activities inherit it) are dispatched fairly between tenants."""
        env = admission.envelope
        return Priority(priority_key=self._planner.priority(env.source, env.trigger_kind),
                        fairness_key=admission.candidate.tenant.encode()[:64].decode(errors="ignore") or None)

    def start_request(self, admission: Admission) -> dict[str, Any]:
        """The keyword arguments of ``Client.start_workflow`` :meth:`admit` sends for ``admission`` (the
        intake bench's bare baseline sends them too, so both sides make the same Temporal request)."""
        order = work_order_for(admission, self._settings, self._search_attributes)
        attrs = (sa.at_admission(order.work_key, order.tenant, order.trigger_kind, order.input_version)
                 if self._search_attributes else None)
        return {"workflow": AGENT_WORKFLOW, "arg": AgentLoopStart(order.work_key, order.tenant),
                "id": workflow_id_for(order.work_key), "task_queue": self._settings.temporal.task_queue,
                "start_signal": WORK_ORDER_SIGNAL, "start_signal_args": [order], "search_attributes": attrs,
                "priority": self.priority_for(admission),
                "static_summary": summary_for(order), "memo": memo_at_start(order),  # the UI's "what is this run"
                "rpc_timeout": ADMISSION_RPC_TIMEOUT}

    async def admit(self, admission: Admission) -> tuple[str, str | None]:
        request = self.start_request(admission)
        handle = await self._client.start_workflow(**request)
        return request["id"], handle.result_run_id
