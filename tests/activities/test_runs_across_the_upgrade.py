"""A run admitted before the tenancy upgrade (its work order carries ``github:...``, its workflow id
is ``agent/github:...``) still lands its outcome and keeps its slots while it runs.

Real parts: the SQL ledger on both backends, the real activities in Temporal's
``ActivityEnvironment``, the capacity reaper describing a real workflow on the test server.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from sqlmodel import Session
from temporalio.testing import ActivityEnvironment

import ledger
from sluicegate.wiring import capacity_activities
from activities.work_ledger import WorkLedgerActivities
from intake.decision import Outcome, Reason
from intake.envelope import TriggerKind
from intake.receipts import ReceiptDraft
from sluicegate.temporal.admitter import TemporalAdmitter
from ledger import CapacityCounter, CapacityHold, SqlIntakeStore, WorkItem, WorkStore, WorkVersion
from sluicegate.forge.client import ForgeClient
from tests.support.sims import FORGE_TOKEN, settings_for
from workflows.capacity_contracts import ReapRequest
from workflows.contracts import AGENT_WORKFLOW, AgentLoopStart, RunOutcome


def _admitted_before_the_upgrade(engine, repo: str) -> tuple[str, str, str]:
    """(legacy key, today's key, version): the rows as migration 0010 leaves them for a run in flight."""
    legacy, key, version = f"github:acme/{repo}#1:review", f"acme/github:acme/{repo}#1:review", uuid.uuid4().hex
    decision = SqlIntakeStore(engine).decide(ReceiptDraft(
        outcome=Outcome.ACCEPT, reason=Reason.ADMITTED, message="admitting", trigger_kind=TriggerKind.EVENT,
        source="github", received_at=datetime.now(UTC), delivery_id=uuid.uuid4().hex, tenant="acme", work_key=key,
        target_id=f"acme/{repo}#1", input_version=version))
    SqlIntakeStore(engine).mark_admitted(decision, f"agent/{legacy}", "run-before-upgrade")
    return legacy, key, version


async def test_an_old_runs_outcome_is_recorded_under_todays_key(engine):
    legacy, key, version = _admitted_before_the_upgrade(engine, f"r{uuid.uuid4().hex[:8]}")
    outcome = RunOutcome(work_key=legacy, input_version=version, generation=1, status="done", reason="completed",
                         tenant="acme", source="github")
    recorded = await ActivityEnvironment().run(WorkLedgerActivities(WorkStore(engine)).record_run_outcome, outcome)
    with Session(engine) as s:
        assert recorded and s.get(WorkVersion, (key, version)).status == "done"


async def test_the_reaper_keeps_the_slots_of_an_old_run_while_its_workflow_runs(empty_ledger_url, sims,
                                                                               temporal_env, task_queue):
    ledger.upgrade(empty_ledger_url)
    settings, engine = settings_for(sims, empty_ledger_url), ledger.make_engine(empty_ledger_url)
    client = temporal_env.client
    forge = ForgeClient(sims.forge.base_url, FORGE_TOKEN, timeout_seconds=5)
    try:
        legacy, key, _ = _admitted_before_the_upgrade(engine, "api")
        with Session(engine) as s, s.begin():
            s.add(CapacityHold(work_key=key, slot_key="tenant:acme", tenant="acme", generation=1,
                               acquired_at=datetime.now(UTC) - timedelta(hours=1)))
            s.add(CapacityCounter(key="tenant:acme", active=1))
        # No worker polls this queue: the old workflow stays open, as a long run would.
        handle = await client.start_workflow(AGENT_WORKFLOW, AgentLoopStart(legacy, "acme"), id=f"agent/{legacy}",
                                             task_queue=task_queue)
        reaper = capacity_activities(client, settings, engine, forge, TemporalAdmitter(client, settings, False))
        kept = await ActivityEnvironment().run(reaper.reap, ReapRequest(grace_seconds=0))
        assert kept.released == [] and ledger.CapacityLedger(engine).counters()["tenant:acme"] == 1
        await handle.terminate("the old run ended")
        freed = await ActivityEnvironment().run(reaper.reap, ReapRequest(grace_seconds=0))
        assert freed.released == [key] and ledger.CapacityLedger(engine).counters()["tenant:acme"] == 0
        with Session(engine) as s:
            assert s.get(WorkItem, key).workflow_id == f"agent/{legacy}"
    finally:
        await forge.aclose()
        engine.dispose()
