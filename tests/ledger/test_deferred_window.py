"""The dispatcher's window (``DeferredQueue.due``) holds the oldest items as well as the best by
priority, so an item aged past its priority is seen behind a long line of higher-priority work.
SQLite and PostgreSQL (the ``engine`` fixture)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlmodel import Session, select

from intake.capacity import Block, CapacityRequest, SlotClaim
from intake.decision import Outcome, Reason
from intake.envelope import TriggerKind
from intake.ports import CapacityContext
from intake.receipts import ReceiptDraft
from ledger import DeferredItem, DeferredQueue, SqlIntakeStore


def _draft(tenant: str, work_key: str) -> ReceiptDraft:
    return ReceiptDraft(outcome=Outcome.ACCEPT, reason=Reason.ADMITTED, message="admitting",
                        trigger_kind=TriggerKind.EVENT, source="github", received_at=datetime.now(UTC),
                        delivery_id=str(uuid.uuid4()), tenant=tenant, work_key=work_key, target_id=work_key,
                        input_version="v1")


def test_the_oldest_low_priority_item_is_in_the_window_behind_a_higher_priority_line(engine):
    tenant = f"aged-{uuid.uuid4().hex[:8]}"
    store, queue = SqlIntakeStore(engine), DeferredQueue(engine)

    def ctx(priority: int) -> CapacityContext:
        return CapacityContext(CapacityRequest(tenant, priority, (SlotClaim(f"global-{tenant}", 1, Block.GLOBAL),)),
                               {"envelope": {}, "candidate": {}})

    key = lambda n: f"{tenant}/github:{tenant}/api#{n}:review"  # noqa: E731
    assert store.decide(_draft(tenant, key(0)), ctx(3)).outcome == "accept"  # takes the only slot
    assert store.decide(_draft(tenant, key(1)), ctx(5)).outcome == "defer"  # the old, low-priority item
    for n in range(2, 32):
        store.decide(_draft(tenant, key(n)), ctx(1))
    try:
        window = [i.work_key for i in queue.due(limit=10) if i.tenant == tenant]
        assert key(1) in window
        assert len(window) <= 10
        assert key(2) in window  # and the best by priority
    finally:  # a global block holds back every tenant's new work: clear the line for later tests
        with Session(engine) as s, s.begin():
            for item in s.exec(select(DeferredItem).where(DeferredItem.tenant == tenant)):
                item.status = "dropped"
                s.add(item)


def test_enqueued_at_and_the_dispatchers_now_are_the_databases_clock(engine):
    """Aging compares ``enqueued_at`` (written by any API replica) with the dispatcher's "now": both
    come from the database, so replicas' clocks cannot disagree about how long an item waited."""
    from sqlalchemy import func

    from ledger import _deferred

    tenant = f"clock-{uuid.uuid4().hex[:8]}"
    request = CapacityRequest(tenant, 3, (SlotClaim(f"global-{tenant}", 1, Block.GLOBAL),))
    before = datetime.now(UTC)
    with Session(engine) as s, s.begin():
        item = _deferred.enqueue(s, tenant=tenant, source="github", work_key=f"{tenant}/k", input_version="v1",
                                 request=request, block=Block.TENANT, blocked_key=None, retry_after=0,
                                 receipt_id=uuid.uuid4().hex, payload={})
        enqueued, db_clock = item.enqueued_at, s.execute(select(func.now())).scalar_one()
        item.status = "dropped"  # leave no waiting item behind for later tests
        s.add(item)
    if engine.dialect.name == "postgresql":
        assert enqueued == db_clock  # the server's now() of the enqueuing transaction, not this process's
    clock = DeferredQueue(engine).now()
    if engine.dialect.name == "postgresql":
        assert clock.tzinfo is not None and clock >= db_clock
    else:  # SQLite: one host, its clock is the database's
        assert before <= enqueued.replace(tzinfo=enqueued.tzinfo or UTC) <= clock
