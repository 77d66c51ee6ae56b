"""Capacity slots in the ledger: atomic under racing admissions, released exactly, quotas and rates.

Runs on SQLite and PostgreSQL. Racing admissions go through the real ``SqlIntakeStore.decide``
from many threads at once; the number accepted is counted from what the store answered and
checked against the counters and holds it wrote.
"""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

from sqlmodel import Session, select

from intake.capacity import Block, CapacityRequest, RateLimit, SlotClaim
from intake.decision import Outcome, Reason
from intake.envelope import TriggerKind
from intake.ports import CapacityContext
from intake.receipts import ReceiptDraft
from ledger import AdmissionCount, CapacityHold, CapacityLedger, DeferredItem, DeferredQueue, SqlIntakeStore


def _draft(tenant: str, work_key: str, version: str = "v1") -> ReceiptDraft:
    return ReceiptDraft(outcome=Outcome.ACCEPT, reason=Reason.ADMITTED, message="admitting",
                        trigger_kind=TriggerKind.EVENT, source="github", received_at=datetime.now(UTC),
                        delivery_id=str(uuid.uuid4()), tenant=tenant, work_key=work_key, target_id=work_key,
                        input_version=version)


def _ctx(tenant: str, limit: int, **kw) -> CapacityContext:
    slots = (SlotClaim(f"key:{tenant}-repo", limit, Block.KEY), SlotClaim(f"tenant:{tenant}", 100, Block.TENANT))
    return CapacityContext(CapacityRequest(tenant, 3, slots, **kw), {"envelope": {}, "candidate": {}})


def test_racing_admissions_never_exceed_the_limit(engine):
    tenant = f"race-{uuid.uuid4().hex[:8]}"
    store = SqlIntakeStore(engine)
    keys = [f"{tenant}/github:{tenant}/r#{n}:review" for n in range(24)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        decisions = list(pool.map(lambda k: store.decide(_draft(tenant, k), _ctx(tenant, 3)), keys))
    accepted = [d for d in decisions if d.outcome == Outcome.ACCEPT]
    deferred = [d for d in decisions if d.outcome == Outcome.DEFER]
    assert len(accepted) == 3 and len(deferred) == 21
    assert {d.reason for d in deferred} <= {"capacity"}
    counters = CapacityLedger(engine).counters()
    assert counters[f"key:{tenant}-repo"] == 3 and counters[f"tenant:{tenant}"] == 3
    with Session(engine) as s:
        holds = list(s.exec(select(CapacityHold).where(CapacityHold.tenant == tenant)))
        queued = list(s.exec(select(DeferredItem).where(DeferredItem.tenant == tenant)))
    assert {h.work_key for h in holds} == {d.work_key for d in accepted}
    assert all(h.generation == 1 for h in holds)
    assert sorted(i.work_key for i in queued) == sorted(d.work_key for d in deferred)
    assert {i.status for i in queued} == {"waiting"}


def test_release_gives_back_exactly_the_slots_and_a_newer_generation_keeps_them(engine):
    tenant = f"rel-{uuid.uuid4().hex[:8]}"
    store, capacity = SqlIntakeStore(engine), CapacityLedger(engine)
    key = f"{tenant}/github:{tenant}/r#1:review"
    assert store.decide(_draft(tenant, key, "v1"), _ctx(tenant, 1)).outcome == Outcome.ACCEPT
    # a newer version while the run holds its slot: reuses it (supersede), no defer
    newer = store.decide(_draft(tenant, key, "v2"), _ctx(tenant, 1))
    assert (newer.outcome, newer.generation) == (Outcome.ACCEPT, 2)
    assert capacity.release(key, up_to_generation=1) == []  # the old run's end must not free the new one's slot
    assert sorted(capacity.release(key, up_to_generation=2)) == [f"key:{tenant}-repo", f"tenant:{tenant}"]
    assert capacity.counters()[f"key:{tenant}-repo"] == 0
    assert capacity.release(key) == []  # idempotent: a retried release frees nothing twice
    assert capacity.counters()[f"key:{tenant}-repo"] == 0


def test_queued_version_is_deduplicated_and_replaced_by_a_newer_one(engine):
    tenant = f"q-{uuid.uuid4().hex[:8]}"
    store = SqlIntakeStore(engine)
    assert store.decide(_draft(tenant, f"{tenant}/github:{tenant}/r#1:review"), _ctx(tenant, 1)).outcome == Outcome.ACCEPT
    waiting = f"{tenant}/github:{tenant}/r#2:review"
    first = store.decide(_draft(tenant, waiting, "v1"), _ctx(tenant, 1))
    again = store.decide(_draft(tenant, waiting, "v1"), _ctx(tenant, 1))
    newer = store.decide(_draft(tenant, waiting, "v2"), _ctx(tenant, 1))
    assert (first.outcome, again.outcome, again.reason, newer.outcome) == (
        Outcome.DEFER, Outcome.REJECT, "duplicate-work", Outcome.DEFER)
    with Session(engine) as s:
        [item] = s.exec(select(DeferredItem).where(DeferredItem.work_key == waiting))
    assert (item.status, item.input_version) == ("waiting", "v2")


def test_day_quota_and_rate_limit_defer_with_a_retry_after(engine):
    tenant = f"quota-{uuid.uuid4().hex[:8]}"
    store = SqlIntakeStore(engine)
    ctx = _ctx(tenant, 100, day_quota=2)
    outcomes = [store.decide(_draft(tenant, f"{tenant}/github:{tenant}/r#{n}:review"), ctx) for n in range(3)]
    assert [o.outcome for o in outcomes] == [Outcome.ACCEPT, Outcome.ACCEPT, Outcome.DEFER]
    assert outcomes[2].reason == "quota" and 0 < outcomes[2].retry_after_seconds <= 86400 * 1.2 + 1

    tenant = f"rate-{uuid.uuid4().hex[:8]}"
    ctx = _ctx(tenant, 100, rate=RateLimit(f"rate:{tenant}:github", per_second=0.5, burst=2))
    outcomes = [store.decide(_draft(tenant, f"{tenant}/github:{tenant}/r#{n}:review"), ctx) for n in range(3)]
    assert [o.outcome for o in outcomes] == [Outcome.ACCEPT, Outcome.ACCEPT, Outcome.DEFER]
    assert outcomes[2].reason == "rate-limited" and 1.0 <= outcomes[2].retry_after_seconds <= 2.0 * 1.2 + 0.2
    # a refused rate token gives back the slots it had taken
    assert CapacityLedger(engine).counters()[f"tenant:{tenant}"] == 2


def test_a_refused_slot_or_quota_leaves_its_count_as_it_was(engine):
    """A slot and the day quota are each taken in one upsert (``ledger/_capacity.py``): at the limit it
    must change nothing (and take nothing), and a limit of 0 refuses from the start."""
    tenant = f"full-{uuid.uuid4().hex[:8]}"
    store = SqlIntakeStore(engine)
    ctx = _ctx(tenant, 1, day_quota=5)
    outcomes = [store.decide(_draft(tenant, f"{tenant}/github:{tenant}/r#{n}:review"), ctx) for n in range(2)]
    assert [o.outcome for o in outcomes] == [Outcome.ACCEPT, Outcome.DEFER]
    counters = CapacityLedger(engine).counters()
    assert counters[f"key:{tenant}-repo"] == 1 and counters[f"tenant:{tenant}"] == 1
    with Session(engine) as s:
        assert s.exec(select(AdmissionCount.count).where(AdmissionCount.tenant == tenant)).one() == 1

    tenant = f"zero-{uuid.uuid4().hex[:8]}"
    refused = store.decide(_draft(tenant, f"{tenant}/github:{tenant}/r#1:review"), _ctx(tenant, 0, day_quota=5))
    assert refused.outcome == Outcome.DEFER and refused.reason == "capacity"
    assert CapacityLedger(engine).counters()[f"key:{tenant}-repo"] == 0

    tenant = f"noquota-{uuid.uuid4().hex[:8]}"
    refused = store.decide(_draft(tenant, f"{tenant}/github:{tenant}/r#1:review"), _ctx(tenant, 3, day_quota=0))
    assert refused.outcome == Outcome.DEFER and refused.reason == "quota"
    counters = CapacityLedger(engine).counters()
    assert counters[f"key:{tenant}-repo"] == 0 and counters[f"tenant:{tenant}"] == 0  # given back


def _key_ctx(tenant: str, repo: str, limit: int = 1) -> CapacityContext:
    return CapacityContext(CapacityRequest(tenant, 3, (SlotClaim(f"key:repo:{tenant}/{repo}", limit, Block.KEY),)),
                           {"envelope": {}, "candidate": {}})


def test_work_waiting_on_one_repository_does_not_hold_back_another(engine):
    tenant = f"hol-{uuid.uuid4().hex[:8]}"
    store = SqlIntakeStore(engine)
    assert store.decide(_draft(tenant, f"{tenant}/github:{tenant}/api#1:review"), _key_ctx(tenant, "api")).outcome == "accept"
    waiting = store.decide(_draft(tenant, f"{tenant}/github:{tenant}/api#2:review"), _key_ctx(tenant, "api"))
    other_repo = store.decide(_draft(tenant, f"{tenant}/github:{tenant}/web#1:review"), _key_ctx(tenant, "web"))
    same_repo = store.decide(_draft(tenant, f"{tenant}/github:{tenant}/api#3:review"), _key_ctx(tenant, "api"))
    assert (waiting.outcome, other_repo.outcome, same_repo.outcome) == ("defer", "accept", "defer")


def test_an_item_waiting_on_an_unreadable_source_does_not_block_or_break_new_work(engine):
    tenant = f"src-{uuid.uuid4().hex[:8]}"
    store, queue = SqlIntakeStore(engine), DeferredQueue(engine)
    assert store.decide(_draft(tenant, f"{tenant}/github:{tenant}/api#1:review"), _key_ctx(tenant, "api")).outcome == "accept"
    store.decide(_draft(tenant, f"{tenant}/github:{tenant}/api#2:review"), _key_ctx(tenant, "api"))
    [item] = [i for i in queue.waiting() if i.tenant == tenant]
    queue.requeue(item.id, Block.SOURCE, 30.0, "forge 503")
    fresh = store.decide(_draft(tenant, f"{tenant}/github:{tenant}/web#1:review"), _key_ctx(tenant, "web"))
    assert fresh.outcome == "accept"


def test_a_flood_cannot_fill_the_window_a_dispatch_pass_sees(engine):
    flood, steady = f"flood-{uuid.uuid4().hex[:8]}", f"steady-{uuid.uuid4().hex[:8]}"
    store, queue = SqlIntakeStore(engine), DeferredQueue(engine)
    full = CapacityContext(CapacityRequest(flood, 3, (SlotClaim(f"global-{flood}", 0 + 1, Block.GLOBAL),)),
                           {"envelope": {}, "candidate": {}})
    store.decide(_draft(flood, f"{flood}/github:{flood}/api#0:review"), full)  # takes the only slot
    for n in range(1, 31):
        store.decide(_draft(flood, f"{flood}/github:{flood}/api#{n}:review"), full)
    steady_ctx = CapacityContext(CapacityRequest(steady, 3, (SlotClaim(f"global-{flood}", 1, Block.GLOBAL),)),
                                 {"envelope": {}, "candidate": {}})
    assert store.decide(_draft(steady, f"{steady}/github:{steady}/api#1:review"), steady_ctx).outcome == "defer"
    window = [i for i in queue.due(limit=20) if i.tenant in (flood, steady)]
    # This test's items wait on a global block, which holds back every tenant's new work: clear
    # them so later tests on the shared session ledger start from an empty line.
    with Session(engine) as s, s.begin():
        for item in s.exec(select(DeferredItem).where(DeferredItem.tenant.in_((flood, steady)))):
            item.status = "dropped"
            s.add(item)
    assert any(i.tenant == steady for i in window)
    assert sum(i.tenant == flood for i in window) <= 20


def test_a_dispatcher_decision_on_a_replaced_payload_is_not_applied(engine):
    tenant = f"stale-{uuid.uuid4().hex[:8]}"
    store, queue = SqlIntakeStore(engine), DeferredQueue(engine)
    store.decide(_draft(tenant, f"{tenant}/github:{tenant}/api#1:review"), _key_ctx(tenant, "api"))
    key = f"{tenant}/github:{tenant}/api#2:review"
    store.decide(_draft(tenant, key, "old"), _key_ctx(tenant, "api"))
    [read] = [i for i in queue.waiting() if i.work_key == key]  # what a dispatch pass read
    store.decide(_draft(tenant, key, "new"), _key_ctx(tenant, "api"))  # a newer head replaces it
    CapacityLedger(engine).release(f"{tenant}/github:{tenant}/api#1:review")
    stale = CapacityContext(_key_ctx(tenant, "api").request, {}, resume_item=read.id, resume_receipt=read.receipt_id)
    answer = store.decide(_draft(tenant, key, "old"), stale)
    assert answer.outcome == "defer" and "replaced" in answer.message
    [item] = [i for i in queue.waiting() if i.work_key == key]
    assert (item.id, item.input_version, item.status) == (read.id, "new", "waiting")


def test_closed_breakers_and_other_sources_buckets_do_not_hold_new_work_back(engine):
    tenant = f"brk-{uuid.uuid4().hex[:8]}"
    store = SqlIntakeStore(engine)
    open_ctx = CapacityContext(CapacityRequest(tenant, 3, ()), {}, breaker=(Block.BREAKER, 5.0, "model breaker open"))
    assert store.decide(_draft(tenant, f"{tenant}/github:{tenant}/api#1:review"), open_ctx).reason == "breaker-open"
    assert store.decide(_draft(tenant, f"{tenant}/github:{tenant}/api#2:review"), _ctx(tenant, 5)).outcome == "accept"

    rate = lambda source: CapacityContext(CapacityRequest(  # noqa: E731
        tenant, 3, (), rate=RateLimit(f"rate:{tenant}:{source}", per_second=0.01, burst=1)), {})
    assert store.decide(_draft(tenant, f"{tenant}/github:{tenant}/api#3:review"), rate("github")).outcome == "accept"
    assert store.decide(_draft(tenant, f"{tenant}/github:{tenant}/api#4:review"), rate("github")).reason == "rate-limited"
    assert store.decide(_draft(tenant, f"{tenant}/github:{tenant}/api#5:review"), rate("manual")).outcome == "accept"


def test_racing_first_failures_of_a_breaker_are_all_counted(engine):
    from intake.capacity import BreakerPolicy
    from ledger import BreakerBoard

    provider = f"model-{uuid.uuid4().hex[:8]}"
    board = BreakerBoard(engine, BreakerPolicy(failure_threshold=100, window_seconds=600))
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda n: board.record_failure(provider, f"503 #{n}"), range(16)))
    [state] = [b for b in board.states() if b.provider == provider]
    assert state.failures == 16
