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
