"""A flood from one tenant while another submits steadily: the steady tenant's wait stays bounded.

Real parts: ``SqlIntakeStore`` on the test ledger (SQLite and PostgreSQL), the forge
simulator over HTTP as the authoritative source, ``IntakeService`` with a real
``CapacityGate``, and the real ``dispatch_once`` over ``DeferredQueue``/``CapacityLedger``.
Runs are not the subject: the admitter only records what it was asked to start, and "a
run ends" is the test calling ``CapacityLedger.release`` and then a dispatch pass, in rounds.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest
from sqlalchemy import delete
from sqlmodel import Session, select

from intake.capacity import CapacityLimits, CapacityPlanner
from intake.capacity.dispatch import dispatch_once
from intake.capacity.gate import CapacityGate
from intake.decision import Outcome, Reason
from intake.envelope import Envelope, PullRequestRef, TriggerKind, WorkCandidate
from intake.forge_reader import ForgeTargetReader
from intake.identity import review_candidate, workflow_id_for
from intake.scope import ScopeRules
from intake.ports import Admission
from intake.service import IntakeService
from ledger import (AdmissionCount, CapacityCounter, CapacityHold, CapacityLedger, DeferredItem, DeferredQueue,
                    RateBucket, SqlIntakeStore)
from ledger._queries import ReceiptFilter, list_receipts
from sluicegate.forge.client import ForgeClient
from tests.support.sims import FORGE_TOKEN

GLOBAL_LIMIT = 4
ENDS_PER_ROUND = 2
FLOOD_ITEMS = 60
STEADY_ROUNDS = 10
TENANTS = 2


@dataclass
class Started:
    work_key: str
    round: int
    at: datetime


class RecordingAdmitter:
    """The ``intake.ports.Admitter`` port: records each start (work key, round, time), starts nothing."""

    def __init__(self) -> None:
        self.round = 0
        self.started: list[Started] = []

    async def admit(self, admission: Admission) -> tuple[str, str | None]:
        key = admission.decision.work_key
        self.started.append(Started(key, self.round, datetime.now(UTC)))
        return workflow_id_for(key), uuid.uuid4().hex


@pytest.fixture
def clean_capacity(engine):
    """The ledger is shared by the session: start and end with no counters, holds or queue."""
    def wipe() -> None:
        with engine.begin() as conn:
            for model in (CapacityHold, CapacityCounter, DeferredItem, AdmissionCount, RateBucket):
                conn.execute(delete(model))
    wipe()
    yield engine
    wipe()


def _pull(sims, ref: PullRequestRef) -> str:
    head = uuid.uuid4().hex + uuid.uuid4().hex[:8]
    sims.forge_ctl("POST", f"/pulls/{ref.owner}/{ref.repo}/{ref.number}", json={"head_sha": head})
    return head


def _delivery(tenant: str, ref: PullRequestRef, head: str) -> tuple[Envelope, WorkCandidate]:
    now = datetime.now(UTC)
    env = Envelope(id=str(uuid.uuid4()), source="github", type="pull_request.opened", subject=ref.target_id,
                   time=now, received_at=now, trigger_kind=TriggerKind.EVENT, tenant=tenant)
    return env, review_candidate(tenant, ref, head)


def _fifo_waits(arrivals: dict[str, int], enqueued_at: dict[str, datetime], freed_per_round: int) -> dict[str, int]:
    """Rounds each queued item would wait if freed slots went to the oldest waiting item (plain FIFO).

    Same data as the run: arrival rounds and ``enqueued_at`` of the items that were deferred,
    and the same number of slots freed per round."""
    waits, done, rnd = {}, set(), 0
    while len(done) < len(arrivals):
        rnd += 1
        waiting = [k for k, r in arrivals.items() if r <= rnd and k not in done]
        for key in sorted(waiting, key=enqueued_at.__getitem__)[:freed_per_round]:
            waits[key] = rnd - arrivals[key]
            done.add(key)
    return waits


async def test_a_flood_does_not_hold_up_a_steady_tenant(sims, clean_capacity):
    engine = clean_capacity
    run = uuid.uuid4().hex[:8]  # unique owners: the session's ledger and forge are shared
    flood, steady = f"flood-{run}", f"steady-{run}"
    admitter = RecordingAdmitter()
    forge = ForgeClient(sims.forge.base_url, FORGE_TOKEN, timeout_seconds=5)
    # Default retry-after (30 s): items waiting for a slot are due at every pass regardless.
    gate = CapacityGate(CapacityPlanner(CapacityLimits(global_active_runs=GLOBAL_LIMIT)))
    service = IntakeService(SqlIntakeStore(engine), ForgeTargetReader(forge), admitter, gate,
                            scope=ScopeRules.everything())
    queue, capacity = DeferredQueue(engine), CapacityLedger(engine)
    arrival: dict[str, int] = {}
    direct: set[str] = set()
    global_seen: list[int] = []

    async def submit(tenant: str, ref: PullRequestRef, rnd: int) -> None:
        env, cand = _delivery(tenant, ref, _pull(sims, ref))
        decision = await service.submit(env, cand)
        arrival[cand.work_key] = rnd
        if decision.outcome == Outcome.ACCEPT:
            direct.add(cand.work_key)
        else:
            assert (decision.outcome, decision.reason) == (Outcome.DEFER, Reason.CAPACITY), decision
        global_seen.append(capacity.counters().get("global", 0))

    try:
        for n in range(1, FLOOD_ITEMS + 1):
            await submit(flood, PullRequestRef(flood, "api", n), 0)
        assert len(direct) == GLOBAL_LIMIT  # the first four fit; the rest wait in the queue

        rnd = 0
        while queue.waiting() or rnd < STEADY_ROUNDS:
            rnd += 1
            assert rnd <= 100, "the queue did not drain"
            admitter.round = rnd
            if rnd <= STEADY_ROUNDS:
                await submit(steady, PullRequestRef(steady, "web", rnd), rnd)
            holding = {h.work_key for h in capacity.holds()}
            running = [s.work_key for s in admitter.started if s.work_key in holding]
            for key in running[:ENDS_PER_ROUND]:  # the oldest runs end
                assert capacity.release(key)
            active = {t: len(k) for t, k in capacity.active_work_by_tenant().items()}
            await dispatch_once(queue, service, active)
            global_seen.append(capacity.counters().get("global", 0))
    finally:
        await forge.aclose()

    assert max(global_seen) == GLOBAL_LIMIT  # the limit was reached ...
    assert all(n <= GLOBAL_LIMIT for n in global_seen)  # ... and never exceeded
    assert len(capacity.holds()) <= GLOBAL_LIMIT

    admitted_in = {s.work_key: s.round for s in admitter.started}
    assert len(admitted_in) == len(admitter.started) == FLOOD_ITEMS + STEADY_ROUNDS  # each started once
    flood_keys = {k for k in arrival if f":{flood}/" in k}
    assert len(flood_keys) == FLOOD_ITEMS and flood_keys <= admitted_in.keys()  # no starvation either way

    steady_keys = sorted((k for k in arrival if f":{steady}/" in k), key=arrival.__getitem__)
    waits = {k: admitted_in[k] - arrival[k] for k in steady_keys}
    # The bound K, in rounds after the arrival round. Runs end oldest first, ENDS_PER_ROUND a
    # round, so with GLOBAL_LIMIT slots each run lasts GLOBAL_LIMIT / ENDS_PER_ROUND = 2 rounds
    # and each pass frees exactly ENDS_PER_ROUND slots (no other limit is set): it admits that
    # many items, then stops on the global limit. fair_order gives every tenant one item per
    # turn, so the steady tenant's oldest waiting item is at most TENANTS-th in a pass and is
    # admitted within ceil(TENANTS / ENDS_PER_ROUND) passes, its arrival round's being the
    # first. Here TENANTS <= ENDS_PER_ROUND, so by induction the steady backlog never exceeds
    # the item that just arrived, and K = ceil(2 / 2) - 1 = 0: admitted in its arrival round.
    k_bound = math.ceil(TENANTS / ENDS_PER_ROUND) - 1
    assert max(waits.values()) <= k_bound, waits

    deferred = {i.work_key: i for i in _items(engine) if i.work_key in arrival}
    assert set(deferred) == set(arrival) - direct
    fifo = _fifo_waits({k: arrival[k] for k in deferred}, {k: i.enqueued_at for k, i in deferred.items()},
                       ENDS_PER_ROUND)
    fifo_steady = [fifo[k] for k in steady_keys]
    # FIFO would have served the 56 queued flood items first, ENDS_PER_ROUND per round.
    assert min(fifo_steady) > 20, fifo_steady
    assert max(waits.values()) + 1 <= max(fifo_steady) / 10, (waits, fifo_steady)
    assert all(i.status == "admitted" for i in deferred.values())

    for key in arrival:
        receipts = sorted(list_receipts(engine, ReceiptFilter(work_key=key, limit=10)), key=lambda r: r.created_at)
        outcomes = [(r.outcome, r.reason) for r in receipts]
        if key in direct:
            assert outcomes == [("accept", "admitted")], (key, outcomes)
        else:
            assert outcomes == [("defer", "capacity"), ("accept", "admitted")], (key, outcomes)
            assert receipts[0].id == deferred[key].receipt_id

    for key in list(admitted_in):
        capacity.release(key)
    assert capacity.counters().get("global", 0) == 0 and not capacity.holds()


def _items(engine) -> list[DeferredItem]:
    with Session(engine) as s:
        return list(s.exec(select(DeferredItem)).all())
