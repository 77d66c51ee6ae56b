"""The outbox relay admits accepted-but-not-admitted work, once, through the real workflow."""

from __future__ import annotations

from contextlib import AsyncExitStack
from datetime import UTC, datetime

import httpx
from sqlmodel import Session, select

import ledger
from activities.maintenance import PruneRequest, RelayRequest, RelayResult
from intake.decision import Outcome, Reason
from intake.envelope import TriggerKind
from intake.receipts import ReceiptDraft
from ledger import Receipt, SqlIntakeStore, WorkVersion
from tests.support.agent_runs import PR42_HEAD
from tests.support.sims import settings_for
from worker import create_worker
from workflows.names import OUTBOX_RELAY_WORKFLOW


def _accepted_but_not_admitted(store: SqlIntakeStore, delivery_id: str):
    return store.decide(ReceiptDraft(
        outcome=Outcome.ACCEPT, reason=Reason.ADMITTED, message="admitting", trigger_kind=TriggerKind.EVENT,
        source="github", received_at=datetime.now(UTC), delivery_id=delivery_id, event_type="pull_request.opened",
        subject="acme/api#42", tenant="acme", work_key="acme/github:acme/api#42:review", target_id="acme/api#42",
        input_version=PR42_HEAD))


async def test_relay_admits_pending_items_and_the_run_completes(temporal_env, sims, tmp_path, task_queue):
    sims.reset()
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    settings = settings_for(sims, url, TEMPORAL_TASK_QUEUE=task_queue)  # the relay admits onto it
    engine = ledger.make_engine(url)
    store = SqlIntakeStore(engine)
    decision = _accepted_but_not_admitted(store, "lost-admission-1")
    assert store.pending_admissions(older_than_seconds=3600) == []  # inside the grace period: not touched
    async with AsyncExitStack() as stack:
        async with await create_worker(temporal_env.client, settings, stack, task_queue, search_attributes=False):
            relayed = await temporal_env.client.execute_workflow(
                OUTBOX_RELAY_WORKFLOW, RelayRequest(grace_seconds=0), id=f"relay-{task_queue}", task_queue=task_queue,
                result_type=RelayResult)
            assert relayed.admitted == [f"acme/github:acme/api#42:review@{PR42_HEAD}"] and relayed.failed == []
            again = await temporal_env.client.execute_workflow(
                OUTBOX_RELAY_WORKFLOW, RelayRequest(grace_seconds=0), id=f"relay2-{task_queue}", task_queue=task_queue,
                result_type=RelayResult)
            assert again.admitted == []
            handle = temporal_env.client.get_workflow_handle("agent/acme/github:acme/api#42:review")
            await handle.result()
    with Session(engine) as s:
        version = s.get(WorkVersion, ("acme/github:acme/api#42:review", PR42_HEAD))
        receipt = s.get(Receipt, decision.receipt_id)
    assert version.status == "done" and receipt.workflow_id == "agent/acme/github:acme/api#42:review"
    assert len(httpx.get(f"{sims.forge.base_url}/_sim/comments").json()) == 1
    engine.dispose()


def test_prune_forgets_only_deliveries_older_than_the_window(tmp_path):
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    engine = ledger.make_engine(url)
    store = SqlIntakeStore(engine)
    old = ReceiptDraft(outcome=Outcome.REJECT, reason=Reason.STALE_VERSION, message="", source="github",
                       trigger_kind=TriggerKind.EVENT, received_at=datetime(2020, 1, 1, tzinfo=UTC), delivery_id="old")
    store.decide(old)
    store.decide(ReceiptDraft(**{**old.__dict__, "delivery_id": "new", "received_at": datetime.now(UTC)}))
    assert store.prune_deliveries(window_hours=PruneRequest(window_hours=24).window_hours) == 1
    assert store.reject_if_delivery_seen(old) is None  # forgotten: decided afresh
    assert store.reject_if_delivery_seen(ReceiptDraft(**{**old.__dict__, "delivery_id": "new"})) is not None
    with Session(engine) as s:
        # Receipts are history and are never pruned with the ids: 2 decisions (a duplicate writes none).
        assert [r.delivery_id for r in s.exec(select(Receipt).order_by(Receipt.created_at)).all()] == [
            "old", "new"]
    engine.dispose()


def _accepted(store: SqlIntakeStore, tenant: str, n: int):
    return store.decide(ReceiptDraft(
        outcome=Outcome.ACCEPT, reason=Reason.ADMITTED, message="admitting", trigger_kind=TriggerKind.EVENT,
        source="github", received_at=datetime.now(UTC), delivery_id=f"{tenant}-{n}-{datetime.now(UTC).timestamp()}",
        event_type="pull_request.opened", subject=f"{tenant}/api#{n}", tenant=tenant,
        work_key=f"{tenant}/github:{tenant}/api#{n}:review", target_id=f"{tenant}/api#{n}", input_version="a" * 40))


class _Admitter:
    """Starts every work key but those in ``failing`` (a configuration error, say: it fails every time)."""

    def __init__(self, failing: set[str]) -> None:
        self.failing, self.started = failing, []

    async def admit(self, admission):
        key = admission.decision.work_key
        if key in self.failing:
            raise RuntimeError(f"no price configured for {key}")
        self.started.append(key)
        return f"agent/{key}", "run-1"


async def test_items_a_kill_holds_or_that_fail_every_time_never_keep_other_work_out_of_the_window(engine):
    """Found by an adversarial review (session 17): the relay read the oldest ``limit`` accepted
    versions, so versions a kill held (a noisy tenant killed after a Temporal outage) or whose start
    failed on every pass filled its window for good, and a quiet tenant's accepted work was never
    started. Kill-held versions are now not read, and a failed start moves its version to the back."""
    import uuid

    from intake.outbox import relay
    from ledger import KillSwitch

    store, kills = SqlIntakeStore(engine), KillSwitch(engine)
    noisy, broken, quiet = (f"{name}{uuid.uuid4().hex[:6]}" for name in ("noisy", "broken", "quiet"))
    for n in range(3):
        _accepted(store, noisy, n)
    for n in range(3):
        _accepted(store, broken, n)
    _accepted(store, quiet, 1)
    kills.kill("tenant", noisy, "oncall", "runaway tenant")
    mine = {noisy, broken, quiet}

    def pending():
        return [p for p in store.pending_admissions(0, limit=10**6) if p.draft.tenant in mine]

    assert {p.draft.tenant for p in pending()} == {broken, quiet}  # the kill holds the noisy ones
    admitter = _Admitter({f"{broken}/github:{broken}/api#{n}:review" for n in range(3)})
    for _ in range(3):  # a window of 3: the three broken ones are older than the quiet one
        await relay(store, pending()[:3], admitter, kills)  # the relay's order, other tests' rows left out
    assert admitter.started == [f"{quiet}/github:{quiet}/api#1:review"]
    kills.unkill("tenant", noisy, "oncall", "resumed")
    assert {p.draft.tenant for p in pending()} == {noisy, broken}
