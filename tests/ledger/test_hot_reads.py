"""The worker's hot ledger reads, built once: the deferred queue's "anything waiting?" (a run's
release skips its dispatch pass without it), an order's claim standing as Core rows, and the model
call's reads sharing one connection. Real ledger on SQLite and PostgreSQL."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from sqlmodel import Session

import ledger
from intake.capacity import Block, CapacityRequest
from intake.decision import Outcome, Reason
from intake.envelope import TriggerKind
from intake.receipts import ReceiptDraft
from ledger import DeferredQueue, KillSwitch, ModelJournal, SqlIntakeStore, WorkStore
from ledger._deferred import enqueue, finish


@pytest.fixture
def fresh_engine(fresh_ledger_url):
    engine = ledger.make_engine(fresh_ledger_url)
    yield engine
    engine.dispose()


def test_any_waiting_follows_the_queue(fresh_engine):
    queue = DeferredQueue(fresh_engine)
    assert not queue.any_waiting()
    with Session(fresh_engine) as s, s.begin():
        item = enqueue(s, tenant="acme", source="github", work_key="acme/k", input_version="v1",
                       request=CapacityRequest("acme", 3), block=Block.SOURCE, blocked_key=None, retry_after=600.0,
                       receipt_id="rcpt-1", payload={"envelope": {"id": "v1"}, "candidate": {}})
        item_id = item.id
    assert queue.any_waiting()  # waiting, though not due for ten minutes: a pass would look at it later
    with Session(fresh_engine) as s, s.begin():
        finish(s, item_id, "admitted", "rcpt-2")
    assert not queue.any_waiting()


def test_the_claim_standing_reads_the_admitted_rows(engine):
    key, version = f"acme/github:acme/hot{uuid.uuid4().hex[:8]}#1:review", uuid.uuid4().hex
    store = WorkStore(engine)
    assert store.standing(key, version, with_receipt=True) == (None, None, None)
    decision = SqlIntakeStore(engine).decide(ReceiptDraft(
        outcome=Outcome.ACCEPT, reason=Reason.ADMITTED, message="admitting", trigger_kind=TriggerKind.EVENT,
        source="github", received_at=datetime.now(UTC), delivery_id=uuid.uuid4().hex, tenant="acme", work_key=key,
        target_id="acme/hot#1", input_version=version))
    item, row, receipt = store.standing(key, version, with_receipt=True)
    assert (item.generation, item.current_version) == (1, version)
    assert (row.generation, row.receipt_id) == (1, decision.receipt_id)
    assert (receipt.id, receipt.outcome, receipt.work_key, receipt.input_version, receipt.generation,
            receipt.tenant) == (decision.receipt_id, "accept", key, version, 1, "acme")
    assert store.receipt_created_at(decision.receipt_id) is not None and store.receipt_created_at("nope") is None
    assert store.standing(key, "other", with_receipt=True)[1:] == (None, None)


def test_the_model_calls_reads_share_one_connection_and_see_a_kill(engine):
    kills, journal = KillSwitch(engine), ModelJournal(engine)
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    key = f"{tenant}/github:{tenant}/api#1:review"
    with kills.reads() as conn:
        assert kills.active_for(key, tenant, conn) is None
        assert journal.find(key, "v1", 1, 1, conn) is None
    kill = kills.kill("tenant", tenant, "ops", "stop it")
    with kills.reads() as conn:
        found = kills.active_for(key, tenant, conn)
        assert found is not None and found.id == kill.id
        assert kills.newest_covering_tenant(tenant, conn) == kill.id
