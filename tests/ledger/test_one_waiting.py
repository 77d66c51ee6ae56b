""""One" is enforced by the database: at most one waiting deferred item per (tenant, work key).

SQLite and PostgreSQL: the partial unique index refuses a second waiting row; the queue merges a
newer version into the waiting item, keeps a newer event against a late one; a delivery whose
source could not be read is recorded and queued once per version; migration 0014
merges duplicates a race left behind. PostgreSQL: two connections queueing one key at once end
with one waiting item (the loser meets the index and merges). Dead-letter ids are whole SHA-256s.
"""

from __future__ import annotations

import threading
import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

import ledger
from intake.capacity import Block, CapacityRequest
from intake.decision import Outcome, Reason
from intake.envelope import TriggerKind
from intake.ports import CapacityContext
from intake.receipts import ReceiptDraft
from ledger import DeadLetter, DeadLetters, DeferredItem, Delivery, SqlIntakeStore
from ledger._deferred import enqueue
from ledger._dead_letters import dead_letter_id
from ledger._sql import as_utc, utcnow


def _key() -> tuple[str, str]:
    tenant = f"one-{uuid.uuid4().hex[:8]}"
    return tenant, f"{tenant}/github:{tenant}/api#1:review"


def _payload(version: str, emitted: datetime | None = None) -> dict:
    return {"envelope": {"id": version, "time": emitted.isoformat() if emitted else None}, "candidate": {}}


def _enqueue(s: Session, tenant: str, work_key: str, version: str, emitted: datetime | None = None) -> DeferredItem:
    return enqueue(s, tenant=tenant, source="github", work_key=work_key, input_version=version,
                   request=CapacityRequest(tenant, 3), block=Block.SOURCE, blocked_key=None, retry_after=5.0,
                   receipt_id=f"rcpt-{version}", payload=_payload(version, emitted))


def _waiting(engine, tenant: str) -> list[DeferredItem]:
    with Session(engine) as s:
        return list(s.exec(select(DeferredItem).where(DeferredItem.tenant == tenant,
                                                      DeferredItem.status == "waiting")).all())


def _row(tenant: str, work_key: str, status: str, updated_at: datetime | None = None) -> DeferredItem:
    now = updated_at or utcnow()
    return DeferredItem(id=uuid.uuid4().hex, enqueued_at=now, updated_at=now, tenant=tenant, source="github",
                        work_key=work_key, status=status, blocked_on="source-unavailable", next_attempt_at=now,
                        receipt_id="r", payload={})


def test_the_database_refuses_a_second_waiting_item_for_a_key(engine):
    tenant, key = _key()
    with Session(engine) as s, s.begin():
        s.add_all([_row(tenant, key, "waiting"), _row(tenant, key, "admitted"), _row(tenant, key, "dead"),
                   _row(f"{tenant}-other", key, "waiting")])  # finished items and another tenant are fine
    with pytest.raises(IntegrityError):
        with Session(engine) as s, s.begin():
            s.add(_row(tenant, key, "waiting"))
    assert len(_waiting(engine, tenant)) == 1


def test_a_newer_version_merges_into_the_waiting_item_and_a_late_older_event_does_not(engine):
    tenant, key = _key()
    t0 = datetime.now(UTC)
    with Session(engine) as s, s.begin():
        first = _enqueue(s, tenant, key, "v1", t0).id
    with Session(engine) as s, s.begin():
        _enqueue(s, tenant, key, "v2", t0 + timedelta(seconds=5))
    with Session(engine) as s, s.begin():
        _enqueue(s, tenant, key, "v0", t0 - timedelta(seconds=5))  # emitted before v2, arriving after it
    [item] = _waiting(engine, tenant)
    assert (item.id, item.input_version, item.receipt_id) == (first, "v2", "rcpt-v2")


def test_migration_0014_merges_duplicate_waiting_items_keeping_the_newest(empty_ledger_url):
    ledger.upgrade(empty_ledger_url, "0013_journal")
    engine = ledger.make_engine(empty_ledger_url)
    try:
        tenant, key = _key()
        now = utcnow()
        rows = [_row(tenant, key, "waiting", now - timedelta(minutes=m)) for m in (5, 0, 9)]
        table = DeferredItem.__table__
        with engine.begin() as conn:  # what a race could leave before the index existed
            for r in rows:
                conn.execute(table.insert().values({c.name: getattr(r, c.name) for c in table.columns}))
        assert ledger.upgrade(empty_ledger_url) == ledger.head_revision()
        [kept] = _waiting(engine, tenant)
        assert kept.id == rows[1].id
        with Session(engine) as s:
            merged = s.exec(select(DeferredItem).where(DeferredItem.status == "superseded")).all()
        assert sorted(m.id for m in merged) == sorted([rows[0].id, rows[2].id])
        assert all("0014_durable" in m.last_error for m in merged)
    finally:
        engine.dispose()



def test_migration_0014_keeps_the_newest_event_not_the_last_touched_item(empty_ledger_url):
    """The merge follows the queue's rule (emitted_later): a V1 item retried just now (updated_at
    touched) does not beat the V2 item whose event is newer — V1 would be dropped as stale on
    dispatch and V2 lost."""
    ledger.upgrade(empty_ledger_url, "0013_journal")
    engine = ledger.make_engine(empty_ledger_url)
    try:
        tenant, key = _key()
        now = utcnow()

        def row(version: str, emitted: datetime, updated: datetime) -> dict:
            item = _row(tenant, key, "waiting", emitted)
            item.input_version, item.updated_at, item.receipt_id = version, updated, f"r-{version}"
            item.payload = {"envelope": {"id": version, "time": emitted.isoformat()}, "candidate": {}}
            return {c.name: getattr(item, c.name) for c in DeferredItem.__table__.columns}

        v1 = row("v1", now - timedelta(minutes=10), now)  # enqueued first, retried just now
        v2 = row("v2", now - timedelta(minutes=5), now - timedelta(minutes=5))
        late_v0 = row("v0", now - timedelta(minutes=20), now - timedelta(minutes=1))  # an older event, enqueued last
        late_v0["enqueued_at"] = now - timedelta(minutes=1)
        with engine.begin() as conn:
            for r in (v1, v2, late_v0):
                conn.execute(DeferredItem.__table__.insert().values(r))
        ledger.upgrade(empty_ledger_url)
        [kept] = _waiting(engine, tenant)
        assert kept.input_version == "v2"
    finally:
        engine.dispose()

@pytest.mark.postgres
def test_two_connections_queueing_one_key_at_once_leave_one_waiting_item(postgres_url):
    engine = ledger.make_engine(postgres_url)
    tenant, key = _key()
    try:
        errors: list[BaseException] = []
        with Session(engine) as first:
            first.begin()
            _enqueue(first, tenant, key, "v1")  # inserted, not committed: invisible to the second

            def second() -> None:
                try:
                    with Session(engine) as s, s.begin():
                        _enqueue(s, tenant, key, "v2")  # sees no item, inserts, waits on the index
                except BaseException as exc:  # noqa: BLE001 - reported by the test thread
                    errors.append(exc)

            racer = threading.Thread(target=second)
            racer.start()
            _until_blocked(engine, racer)
            first.commit()
        racer.join(timeout=30)
        assert not racer.is_alive() and not errors, errors
        [item] = _waiting(engine, tenant)
        assert (item.input_version, item.receipt_id) == ("v2", "rcpt-v2")  # the loser merged: the newest stays
    finally:
        engine.dispose()


def _until_blocked(engine, racer: threading.Thread) -> None:
    """Wait (bounded) until another backend of this database waits on a lock: the racer's insert."""
    query = sa.text("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()")
    for _ in range(300):
        with engine.connect() as conn:
            if conn.execute(query).scalar():
                return
        assert racer.is_alive(), "the second transaction ended without waiting on the first"
        time.sleep(0.05)
    raise AssertionError("the second transaction never waited on the unique index")


def test_dead_letter_ids_are_whole_digests_that_never_collide(engine):
    long_key = "x" * 400
    ids = {dead_letter_id(f"{t}/{long_key}", "a" * 40, 1) for t in ("acme", "beta")}
    ids |= {dead_letter_id("k", "a" * 40 + "1", 1), dead_letter_id("k", "a" * 40 + "2", 1)}  # same 12-char prefix
    ids |= {dead_letter_id("k@v", "1", 1), dead_letter_id("k", "v@1", 1)}
    assert len(ids) == 6 and all(len(i) == 3 + 64 and i.startswith("dl_") for i in ids)
    assert all(len(i) <= DeadLetter.__table__.c.id.type.length for i in ids)


def test_a_retried_outcome_finds_its_letter_under_either_id_scheme(engine):
    tenant, key = _key()
    letters = DeadLetters(engine)
    outcome = {"work_key": key, "input_version": "b" * 40, "generation": 3, "tenant": tenant, "reason": "x"}
    with Session(engine) as s, s.begin():  # a letter written before 0014, under its readable id
        s.add(DeadLetter(id=f"{key}@{'b' * 12}#3"[:80], created_at=utcnow(), work_key=key, input_version="b" * 40,
                         generation=3, tenant=tenant, source="github", owner="team", status="open", reason="x"))
    for _ in range(2):
        with Session(engine) as s, s.begin():
            letters.record(s, outcome, "team", None)
    with Session(engine) as s, s.begin():
        letters.record(s, outcome | {"generation": 4}, "team", None)
    with Session(engine) as s:
        rows = s.exec(select(DeadLetter).where(DeadLetter.work_key == key)).all()
    assert sorted(r.generation for r in rows) == [3, 4]
    assert dead_letter_id(key, "b" * 40, 4) in {r.id for r in rows}


def _unread(tenant: str, work_key: str, version: str, outcome=Outcome.DEFER) -> ReceiptDraft:
    reason = Reason.SOURCE_UNAVAILABLE if outcome == Outcome.DEFER else Reason.ADMITTED
    return ReceiptDraft(outcome=outcome, reason=reason, message="forge error (503)", trigger_kind=TriggerKind.EVENT,
                        source="github", received_at=datetime.now(UTC), delivery_id=str(uuid.uuid4()), tenant=tenant,
                        work_key=work_key, target_id=work_key, input_version=version, retry_after_seconds=20.0)


def test_an_unread_delivery_is_recorded_and_queued_once_per_version(engine):
    tenant, key = _key()
    store = SqlIntakeStore(engine)
    ctx = CapacityContext(CapacityRequest(tenant, 2), _payload("v1"))
    first = store.decide(_unread(tenant, key, "v1"), ctx)
    assert (first.outcome, first.reason, first.retry_after_seconds) == ("defer", "source-unavailable", 20.0)
    [item] = _waiting(engine, tenant)
    assert (item.blocked_on, item.input_version, item.receipt_id, item.priority) == (
        "source-unavailable", "v1", first.receipt_id, 2)
    waits = (as_utc(item.next_attempt_at) - as_utc(item.updated_at)).total_seconds()
    assert abs(waits - 20.0) < 0.01
    again = store.decide(_unread(tenant, key, "v1"), ctx)  # another delivery of the same version
    assert (again.outcome, again.reason) == ("reject", "duplicate-work")
    newer = store.decide(_unread(tenant, key, "v2"), CapacityContext(CapacityRequest(tenant, 3), _payload("v2")))
    assert newer.outcome == "defer"
    [merged] = _waiting(engine, tenant)
    assert (merged.id, merged.input_version, merged.receipt_id) == (item.id, "v2", newer.receipt_id)
    with Session(engine) as s:
        assert s.get(Delivery, ("github", _delivery(engine, first.receipt_id))) is not None


def test_an_unread_delivery_of_a_version_already_admitted_is_a_duplicate(engine):
    tenant, key = _key()
    store = SqlIntakeStore(engine)
    assert store.decide(_unread(tenant, key, "v1", Outcome.ACCEPT)).outcome == "accept"
    late = store.decide(_unread(tenant, key, "v1"), CapacityContext(CapacityRequest(tenant, 3), _payload("v1")))
    assert (late.outcome, late.reason) == ("reject", "duplicate-work") and "already accepted" in late.message
    assert _waiting(engine, tenant) == []


def _delivery(engine, receipt_id: str) -> str:
    with Session(engine) as s:
        return s.get(ledger.Receipt, receipt_id).delivery_id


def test_a_later_delivery_that_reads_the_source_takes_an_unread_item_over(engine):
    tenant, key = _key()
    store = SqlIntakeStore(engine)
    ctx = CapacityContext(CapacityRequest(tenant, 3), _payload("v1"))
    assert store.decide(_unread(tenant, key, "v1"), ctx).outcome == "defer"
    [item] = _waiting(engine, tenant)
    now = store.decide(_unread(tenant, key, "v1", Outcome.ACCEPT), ctx)  # freshness verified by this one
    assert (now.outcome, now.reason) == ("accept", "admitted")
    with Session(engine) as s:
        ended = s.get(DeferredItem, item.id)
    assert (ended.status, ended.final_receipt_id) == ("superseded", now.receipt_id)
    assert _waiting(engine, tenant) == []
