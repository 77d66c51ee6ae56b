"""Kill at the gate: a delivery in a killed scope is refused ``killed`` before any forge read and
nothing is queued or claimed (its redelivery after the unkill is admitted); a deferred item in a
killed scope stays queued through dispatch passes (one receipt per kill) and is admitted by the
pass after the unkill; a kill committed during the freshness read refuses the accept; the outbox
relay starts nothing in a killed scope.

Real parts: the intake service with the SQL ledger (both backends, a database of this test's own:
capacity counters are global), ``KillSwitch``, the capacity gate, the real ``dispatch_once`` over
``DeferredQueue``, the forge simulator over HTTP (its read counter proves "no read").
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

import ledger
from intake.capacity import CapacityLimits, CapacityPlanner
from intake.capacity.dispatch import dispatch_once
from intake.capacity.gate import CapacityGate
from intake.envelope import Envelope, PullRequestRef, TriggerKind
from intake.forge_reader import ForgeTargetReader
from intake.outbox import relay
from intake.identity import review_candidate, review_work_key, workflow_id_for
from intake.kill_gate import KillGate, kill_refusal
from intake.ports import Admission
from intake.scope import ScopeRules
from intake.service import IntakeService
from ledger import CapacityLedger, DeferredQueue, KillSwitch, SqlIntakeStore
from ledger._queries import ReceiptFilter, list_receipts
from sluicegate.forge.client import ForgeClient
from tests.support.sims import FORGE_TOKEN


class StartsNothing:
    async def admit(self, admission: Admission) -> tuple[str, str | None]:
        return workflow_id_for(admission.decision.work_key), None


def _envelope(ref: PullRequestRef, tenant: str) -> Envelope:
    now = datetime.now(UTC)
    return Envelope(id=str(uuid.uuid4()), source="github", type="pull_request.opened", subject=ref.target_id,
                    time=now, received_at=now, trigger_kind=TriggerKind.EVENT, tenant=tenant)


@pytest.fixture
async def gate_parts(empty_ledger_url, sims):
    ledger.upgrade(empty_ledger_url)
    engine = ledger.make_engine(empty_ledger_url)
    forge = ForgeClient(sims.forge.base_url, FORGE_TOKEN, timeout_seconds=5)
    yield engine, forge
    await forge.aclose()
    engine.dispose()


def _service(engine, forge, global_limit: int | None = None) -> IntakeService:
    gate = CapacityGate(CapacityPlanner(CapacityLimits(global_active_runs=global_limit)))
    return IntakeService(SqlIntakeStore(engine), ForgeTargetReader(forge), StartsNothing(), gate,
                         scope=ScopeRules.everything(), kills=KillGate(KillSwitch(engine)))


def _pull(sims, owner: str) -> PullRequestRef:
    ref = PullRequestRef(owner, f"r{uuid.uuid4().hex[:8]}", 1)
    sims.forge_ctl("POST", f"/pulls/{ref.owner}/{ref.repo}/1", json={"head_sha": uuid.uuid4().hex + "0" * 8})
    return ref


def _reads(sims, ref: PullRequestRef) -> int:
    return sims.forge_ctl("GET", "/stats").json()["by_repository"].get(f"{ref.owner}/{ref.repo}".lower(), 0)


@pytest.mark.parametrize("scope", ["work_key", "tenant", "all"])
async def test_a_delivery_in_a_killed_scope_is_refused_before_any_read_and_admitted_after_unkill(
        gate_parts, sims, scope):
    engine, forge = gate_parts
    tenant = f"k{uuid.uuid4().hex[:6]}"
    ref = _pull(sims, tenant)
    service, kills = _service(engine, forge), KillSwitch(engine)
    target = {"work_key": review_work_key(tenant, ref), "tenant": tenant, "all": "*"}[scope]
    kill = kills.kill(scope, target, "alice", "runaway prompt")
    delivery = _envelope(ref, tenant)
    try:
        refused = await service.submit(delivery, review_candidate(tenant, ref, None))
    finally:
        kills.unkill(scope, target, "carol", "prompt fixed")
    assert (refused.outcome, refused.reason) == ("reject", "killed")
    assert "killed by alice" in refused.message and kill.id in refused.message
    assert _reads(sims, ref) == 0  # decided before the freshness read
    [receipt] = list_receipts(engine, ReceiptFilter(work_key=refused.work_key))
    assert (receipt.id, receipt.reason) == (refused.receipt_id, "killed")
    assert DeferredQueue(engine).waiting() == [] and CapacityLedger(engine).counters().get("global", 0) == 0

    # The sender redelivers the same delivery (GitHub "Redeliver", a Svix retry): decided afresh.
    admitted = await service.submit(delivery, review_candidate(tenant, ref, None))
    assert (admitted.outcome, admitted.reason) == ("accept", "admitted")


async def test_a_deferred_item_in_a_killed_scope_stays_queued_through_passes_and_is_admitted_after_unkill(
        gate_parts, sims):
    engine, forge = gate_parts
    killed_tenant, other_tenant = f"k{uuid.uuid4().hex[:6]}", f"o{uuid.uuid4().hex[:6]}"
    first, doomed, spared = _pull(sims, other_tenant), _pull(sims, killed_tenant), _pull(sims, other_tenant)
    service, kills, queue = _service(engine, forge, global_limit=1), KillSwitch(engine), DeferredQueue(engine)
    answers = [await service.submit(_envelope(ref, t), review_candidate(t, ref, None))
               for ref, t in ((first, other_tenant), (doomed, killed_tenant), (spared, other_tenant))]
    assert [(a.outcome, a.reason) for a in answers] == [("accept", "admitted"), ("defer", "capacity"),
                                                        ("defer", "capacity")]
    kills.kill("tenant", killed_tenant, "alice", "freeze the tenant")
    CapacityLedger(engine).release(answers[0].work_key)  # the first run ended: room for one
    reads = _reads(sims, doomed)

    report = await dispatch_once(queue, service, {})

    assert report.held == [answers[1].work_key] and report.admitted == [answers[2].work_key]
    assert report.dropped == []
    [item] = queue.waiting()  # verified work is kept, untouched
    assert (item.work_key, item.attempts) == (answers[1].work_key, 0)
    CapacityLedger(engine).release(answers[2].work_key)  # room again, still killed
    again = await dispatch_once(queue, service, {})
    assert again.held == [answers[1].work_key] and again.admitted == []
    assert _reads(sims, doomed) == reads  # held without another forge read
    receipts = list_receipts(engine, ReceiptFilter(work_key=answers[1].work_key))
    assert [(r.outcome, r.reason) for r in receipts][0] == ("reject", "killed")  # newest first
    assert [r.reason for r in receipts].count("killed") == 1  # one receipt per item per kill, not per pass

    kills.unkill("tenant", killed_tenant, "carol", "done")
    after = await dispatch_once(queue, service, {})
    assert after.admitted == [answers[1].work_key] and queue.waiting() == []


async def test_a_queued_item_waits_out_a_kill_a_pass_ran_during_and_is_admitted_after_unkill(
        gate_parts, sims):
    engine, forge = gate_parts
    tenant = f"k{uuid.uuid4().hex[:6]}"
    first, queued = _pull(sims, tenant), _pull(sims, tenant)
    service, kills, queue = _service(engine, forge, global_limit=1), KillSwitch(engine), DeferredQueue(engine)
    held = await service.submit(_envelope(first, tenant), review_candidate(tenant, first, None))
    waiting = await service.submit(_envelope(queued, tenant), review_candidate(tenant, queued, None))
    assert (held.outcome, waiting.outcome) == ("accept", "defer")
    kills.kill("tenant", tenant, "alice", "pause")
    CapacityLedger(engine).release(held.work_key)
    during = await dispatch_once(queue, service, {})  # a pass runs while the kill is in force
    assert during.held == [waiting.work_key] and during.admitted == []
    kills.unkill("tenant", tenant, "alice", "resume")
    report = await dispatch_once(queue, service, {})
    assert report.admitted == [waiting.work_key]


class KillsDuringTheRead:
    """The forge reader, with a kill committed while the read is in flight."""

    def __init__(self, reader: ForgeTargetReader, kill) -> None:
        self._reader, self._kill = reader, kill

    async def read(self, ref, tenant=None):
        snapshot = await self._reader.read(ref, tenant)
        self._kill()
        return snapshot


class CountsStarts(StartsNothing):
    def __init__(self) -> None:
        self.started: list[str] = []

    async def admit(self, admission: Admission) -> tuple[str, str | None]:
        self.started.append(admission.decision.work_key)
        return await super().admit(admission)


async def test_a_kill_committed_during_the_freshness_read_refuses_the_accept(gate_parts, sims):
    engine, forge = gate_parts
    tenant = f"k{uuid.uuid4().hex[:6]}"
    ref, kills, starts = _pull(sims, tenant), KillSwitch(engine), CountsStarts()
    reader = KillsDuringTheRead(ForgeTargetReader(forge), lambda: kills.kill("tenant", tenant, "alice", "mid-read"))
    service = IntakeService(SqlIntakeStore(engine), reader, starts, CapacityGate(CapacityPlanner(CapacityLimits())),
                            scope=ScopeRules.everything(), kills=KillGate(kills))
    delivery = _envelope(ref, tenant)
    refused = await service.submit(delivery, review_candidate(tenant, ref, None))
    assert (refused.outcome, refused.reason) == ("reject", "killed") and starts.started == []
    assert CapacityLedger(engine).counters().get("global", 0) == 0  # no slot taken either
    kills.unkill("tenant", tenant, "carol", "over")
    plain = IntakeService(SqlIntakeStore(engine), ForgeTargetReader(forge), starts,
                          CapacityGate(CapacityPlanner(CapacityLimits())), scope=ScopeRules.everything(),
                          kills=KillGate(kills))
    admitted = await plain.submit(delivery, review_candidate(tenant, ref, None))  # the redelivery
    assert admitted.outcome == "accept" and starts.started == [admitted.work_key]


class FailsToStart:
    async def admit(self, admission):
        raise RuntimeError("temporal unreachable")


def _killable(store, forge, admitter, kills) -> IntakeService:
    """An intake service with the kill gate and no capacity limits, starting runs through ``admitter``."""
    return IntakeService(store, ForgeTargetReader(forge), admitter, CapacityGate(CapacityPlanner(CapacityLimits())),
                         scope=ScopeRules.everything(), kills=KillGate(kills))


async def test_the_outbox_relay_leaves_killed_work_in_the_outbox_until_the_unkill(gate_parts, sims):
    engine, forge = gate_parts
    tenant = f"k{uuid.uuid4().hex[:6]}"
    ref, kills, store = _pull(sims, tenant), KillSwitch(engine), SqlIntakeStore(engine)
    accepted = await _killable(store, forge, FailsToStart(), kills).submit(_envelope(ref, tenant),
                                                                           review_candidate(tenant, ref, None))
    assert accepted.outcome == "accept" and "admission pending" in accepted.message
    read_before_the_kill = [p for p in store.pending_admissions(0, limit=10**6) if p.receipt_id == accepted.receipt_id]
    kills.kill("tenant", tenant, "alice", "stop")
    assert accepted.receipt_id not in {p.receipt_id for p in store.pending_admissions(0, limit=10**6)}  # not read while held
    starts = CountsStarts()
    report = await relay(store, read_before_the_kill, starts, kills)  # a kill committed after the relay's read
    assert starts.started == [] and len(report.held) == 1
    kills.unkill("tenant", tenant, "carol", "over")
    mine = [p for p in store.pending_admissions(0, limit=10**6) if p.receipt_id == accepted.receipt_id]
    report = await relay(store, mine, starts, kills)
    assert starts.started == [accepted.work_key] and report.held == []


async def test_a_repeat_starts_no_killed_version_and_starts_it_after_the_unkill(gate_parts, sims):
    # accepted, its start failed; killed; a repeat of the delivery starts nothing while the kill is in
    # force (the version stays accepted, and cools 10 s in that service); after the unkill a repeat starts it
    engine, forge = gate_parts
    tenant = f"k{uuid.uuid4().hex[:6]}"
    ref, kills, store = _pull(sims, tenant), KillSwitch(engine), SqlIntakeStore(engine)
    delivery = _envelope(ref, tenant)
    accepted = await _killable(store, forge, FailsToStart(), kills).submit(delivery,
                                                                           review_candidate(tenant, ref, None))
    assert accepted.outcome == "accept" and accepted.workflow_id is None
    kills.kill("tenant", tenant, "alice", "stop")
    starts = CountsStarts()
    service = _killable(store, forge, starts, kills)
    repeat = await service.submit(delivery, review_candidate(tenant, ref, None))
    assert repeat.reason == "duplicate-delivery"
    assert await service.wait_for_starts(5) == 0 and service.starts.set_off == 1  # set off, and refused
    assert starts.started == [] and store.pending_admission(accepted.work_key, accepted.input_version) is not None
    kills.unkill("tenant", tenant, "carol", "over")
    after = _killable(store, forge, starts, kills)  # another replica: no cooldown of its own
    await after.submit(delivery, review_candidate(tenant, ref, None))
    assert await after.wait_for_starts(5) == 0
    assert starts.started == [accepted.work_key]
    assert store.pending_admission(accepted.work_key, accepted.input_version) is None


def test_the_refusal_names_who_which_scope_and_why():
    class K:
        id, scope, target, actor, reason = "k1", "all", "*", "alice", "incident 42"

    ref = PullRequestRef("acme", "api", 1)
    draft = kill_refusal(K(), _envelope(ref, "acme"), review_candidate("acme", ref, None))
    assert (draft.outcome, draft.reason) == ("reject", "killed")
    assert draft.message == "killed by alice (everything, kill k1): incident 42"
    assert kill_refusal(None, _envelope(ref, "acme"), review_candidate("acme", ref, None)) is None


class KillsBeforeTheStart:
    """The real kill lookup; a kill is committed just before its second question (the one asked after
    the accept committed, before the run is started). ``inline``: how many answers came on the event
    loop (SQLite's ``active_for_inline``); PostgreSQL answers in a thread (``active_for``)."""

    def __init__(self, kills: KillSwitch, kill) -> None:
        self._kills, self._kill, self.asked, self.inline = kills, kill, 0, 0

    def _ask(self) -> None:
        self.asked += 1
        if self.asked == 2:
            self._kill()

    def active_for(self, work_key, tenant):
        self._ask()
        return self._kills.active_for(work_key, tenant)

    def active_for_inline(self, work_key, tenant):
        found = self._kills.active_for_inline(work_key, tenant)
        if found is None:
            return None  # PostgreSQL: asked again with active_for, in a thread
        self._ask()
        self.inline += 1
        return found if self.asked < 2 else self._kills.active_for_inline(work_key, tenant)


async def test_a_kill_committed_after_the_accept_holds_the_start(gate_parts, sims, empty_ledger_url):
    engine, forge = gate_parts
    tenant = f"k{uuid.uuid4().hex[:6]}"
    ref, kills, starts, store = _pull(sims, tenant), KillSwitch(engine), CountsStarts(), SqlIntakeStore(engine)
    lookup = KillsBeforeTheStart(kills, lambda: kills.kill("tenant", tenant, "alice", "after the accept"))
    service = IntakeService(store, ForgeTargetReader(forge), starts, CapacityGate(CapacityPlanner(CapacityLimits())),
                            scope=ScopeRules.everything(), kills=KillGate(lookup))
    held = await service.submit(_envelope(ref, tenant), review_candidate(tenant, ref, None))
    assert held.outcome == "accept" and "held: " in held.message and starts.started == []
    assert store.pending_admissions(0) == []  # left for the outbox relay, which reads it once the kill is lifted
    kills.unkill("tenant", tenant, "carol", "over")
    assert [p.receipt_id for p in store.pending_admissions(0)] == [held.receipt_id]
    assert lookup.asked == 2 and lookup.inline == (2 if empty_ledger_url.startswith("sqlite") else 0)
