"""``starter.py unkill`` starts a dispatch pass: work queued while a tenant was killed — and
held, not dropped, by a dispatch pass that ran during the kill — is re-decided at once, not at
the next scheduled tick.

Real parts: the dev server with the ``sluicegate-dispatch-deferred`` Schedule (interval one hour,
so only the test's own pass during the kill and the unkill's trigger run one), the worker (its dispatch activity,
intake with the kill gate, the agent loop on the model simulator), the CLI in its own process,
the SQLite ledger, the forge simulator over HTTP.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from contextlib import AsyncExitStack
from datetime import UTC, datetime

import pytest
from temporalio.service import RPCError

from intake.capacity.dispatch import dispatch_once
from intake.envelope import Envelope, PullRequestRef, TriggerKind
from intake.identity import review_candidate, workflow_id_for
from intake.ports import Admission
from ledger import CapacityLedger, DeferredQueue, KillSwitch
from sluicegate.temporal import schedules as sched
from sluicegate.services.intake import intake_service
from sluicegate.operations.actions import dispatch_now
from sluicegate.services.resources import open_forge
from tests.scans.conftest import _ctx, agent_results, eventually, running_worker


class StartsNothing:
    """Admits without a run: the slot stays held until the test releases it."""

    async def admit(self, admission: Admission) -> tuple[str, str | None]:
        return workflow_id_for(admission.decision.work_key), None


@pytest.fixture
def one_slot_ctx(dev_env, sims, tmp_path, task_queue):
    c = _ctx(sims, tmp_path, task_queue, TEMPORAL_ADDRESS=dev_env.client.service_client.config.target_host,
             TEMPORAL_NAMESPACE=dev_env.client.namespace, SLUICEGATE__CAPACITY__GLOBAL_ACTIVE_RUNS="1",
             SLUICEGATE__CAPACITY__DISPATCH_INTERVAL_SECONDS="3600")
    yield c
    c.engine.dispose()


def _envelope(ref: PullRequestRef) -> Envelope:
    now = datetime.now(UTC)
    return Envelope(id=f"d-{ref.target_id}", source="github", type="pull_request.opened", subject=ref.target_id,
                    time=now, received_at=now, trigger_kind=TriggerKind.EVENT, tenant="acme")


async def test_unkill_starts_a_dispatch_pass_that_admits_the_queued_work(dev_env, one_slot_ctx):
    ctx, client = one_slot_ctx, dev_env.client
    sid = sched.DISPATCH_SCHEDULE
    assert "no sluicegate-dispatch-deferred schedule" in await dispatch_now(client)  # said, not raised
    async with AsyncExitStack() as stack:
        forge = open_forge(ctx.settings, stack)
        service = intake_service(ctx.settings, ctx.engine, forge, StartsNothing())
        first, queued = PullRequestRef(ctx.owner, "api", 42), PullRequestRef(ctx.owner, "api", 44)
        held = await service.submit(_envelope(first), review_candidate("acme", first, None))
        waiting = await service.submit(_envelope(queued), review_candidate("acme", queued, None))
        assert (held.outcome, waiting.outcome, waiting.reason) == ("accept", "defer", "capacity")
        KillSwitch(ctx.engine).kill("tenant", "acme", "alice", "incident")
        CapacityLedger(ctx.engine).release(held.work_key)  # room, and a pass runs during the kill:
        during = await dispatch_once(DeferredQueue(ctx.engine), service, {})
    assert during.held == [waiting.work_key] and during.admitted == [] and during.dropped == []
    [item] = DeferredQueue(ctx.engine).waiting()  # held, still queued for the unkill's pass

    async with running_worker(client, ctx, search_attributes=True):
        try:
            assert await sched.apply_schedules(client, ctx.settings, [sid]) == {sid: "created"}
            lifted = await asyncio.to_thread(
                subprocess.run, [sys.executable, "starter.py", "unkill", "--tenant", "acme", "--actor", "carol",
                                 "--reason", "incident over"],
                env={**os.environ, **ctx.env}, capture_output=True, text=True, timeout=120)
            assert lifted.returncode == 0, lifted.stderr
            assert "a dispatch pass was started" in lifted.stdout, lifted.stdout

            async def admitted():
                return DeferredQueue(ctx.engine).get(item.id).status == "admitted"

            async def started():  # the item leaves the queue when decided; the run starts just after
                try:
                    await client.get_workflow_handle(workflow_id_for(waiting.work_key)).describe()
                except RPCError:
                    return False
                return True

            assert await eventually(admitted, timeout=60, interval=0.5)
            assert await eventually(started, timeout=30, interval=0.5)
            await agent_results(client, [workflow_id_for(waiting.work_key)])
        finally:
            await client.get_schedule_handle(sid).delete()
