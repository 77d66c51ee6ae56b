"""A deferred item is held to the scope again when the dispatcher re-decides it: a repository taken
out of scope while the item waited is dropped ``out-of-scope`` without another forge read.

Real parts: the intake service with the SQL ledger (both backends, a database of this test's own:
capacity counters are global), the capacity gate, the forge simulator over HTTP.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import ledger
from intake.capacity import CapacityLimits, CapacityPlanner
from intake.capacity.gate import CapacityGate
from intake.envelope import Envelope, PullRequestRef, TriggerKind
from intake.forge_reader import ForgeTargetReader
from intake.identity import review_candidate, workflow_id_for
from intake.ports import Admission
from intake.scope import ScopeRules
from intake.service import IntakeService
from ledger import CapacityLedger, DeferredQueue, SqlIntakeStore
from sluicegate.forge.client import ForgeClient
from tests.support.sims import FORGE_TOKEN


class StartsNothing:
    async def admit(self, admission: Admission) -> tuple[str, str | None]:
        return workflow_id_for(admission.decision.work_key), None


def _scope(*globs: str) -> ScopeRules:
    return ScopeRules(by_source={"github": globs}, by_tenant={"acme": globs})


async def test_an_item_queued_before_its_repository_left_the_scope_is_dropped(empty_ledger_url, sims):
    ledger.upgrade(empty_ledger_url)
    engine = ledger.make_engine(empty_ledger_url)
    forge = ForgeClient(sims.forge.base_url, FORGE_TOKEN, timeout_seconds=5)
    gate = CapacityGate(CapacityPlanner(CapacityLimits(global_active_runs=1)))
    store, reader = SqlIntakeStore(engine), ForgeTargetReader(forge)
    refs = [PullRequestRef("acme", f"r{uuid.uuid4().hex[:8]}", 1) for _ in range(2)]
    for ref in refs:
        sims.forge_ctl("POST", f"/pulls/{ref.owner}/{ref.repo}/1", json={"head_sha": "ab" * 20})
    try:
        before = IntakeService(store, reader, StartsNothing(), gate, scope=_scope("acme/*"))
        decisions = []
        for ref in refs:
            now = datetime.now(UTC)
            env = Envelope(id=str(uuid.uuid4()), source="github", type="pull_request.opened", subject=ref.target_id,
                           time=now, received_at=now, trigger_kind=TriggerKind.EVENT, tenant="acme")
            decisions.append(await before.submit(env, review_candidate("acme", ref, None)))
        assert [(d.outcome, d.reason) for d in decisions] == [("accept", "admitted"), ("defer", "capacity")]
        CapacityLedger(engine).release(decisions[0].work_key)  # the first run ended: room for the queued one

        # Meanwhile the second repository left the scope (config changed, processes restarted).
        after = IntakeService(store, reader, StartsNothing(), gate, scope=_scope(f"acme/{refs[0].repo}"))
        [item] = DeferredQueue(engine).waiting()
        reads = sims.forge_ctl("GET", "/stats").json()["by_repository"][f"acme/{refs[1].repo}"]
        decision = await after.resume(item.id, item.payload, item.receipt_id)
        assert (decision.outcome, decision.reason) == ("reject", "out-of-scope")
        assert DeferredQueue(engine).get(item.id).status == "dropped"
        assert sims.forge_ctl("GET", "/stats").json()["by_repository"][f"acme/{refs[1].repo}"] == reads
    finally:
        await forge.aclose()
        engine.dispose()
