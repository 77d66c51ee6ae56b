"""The kept-delivery store on SQLite and PostgreSQL: one row per delivery however often it is
redelivered (one receipt each), sealed rows open only with their key and for their own row, and
retention removes rows past their age with the prune schedule's rule."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import inspect, update
from sqlmodel import Session, select

import ledger
from intake.decision import Outcome, Reason
from intake.envelope import TriggerKind
from intake.receipts import ReceiptDraft
from ledger import KeptCaps, KeptDeliveries, KeptDelivery, Receipt, Retention
from sluicegate.temporal.codec import PayloadKeyError, PayloadKeys, new_key, parse_key

BODY = b'{"schema": "9", "data": {}}'


@pytest.fixture
def engine(fresh_ledger_url):
    eng = ledger.make_engine(fresh_ledger_url)
    yield eng
    eng.dispose()


def _draft(delivery_id: str, source: str = "stdhooks") -> ReceiptDraft:
    return ReceiptDraft(outcome=Outcome.REJECT, reason=str(Reason.UNSUPPORTED_SCHEMA), message="unsupported",
                        trigger_kind=TriggerKind.EVENT, source=source, received_at=datetime.now(UTC),
                        delivery_id=delivery_id, tenant="acme")


def _keys() -> PayloadKeys:
    return PayloadKeys(parse_key(new_key()))


def test_a_redelivered_rejection_is_kept_once_and_answered_each_time(engine):
    store = KeptDeliveries(engine)
    first, kept1 = store.reject_and_keep(_draft("d1"), {"content-type": "application/json",
                                                        "authorization": "Bearer token"}, BODY, "d1", None)
    second, kept2 = store.reject_and_keep(_draft("d1"), {}, BODY, "d1", None)
    assert (kept1, kept2) == (True, True) and first.receipt_id != second.receipt_id
    [row] = store.find("d1")
    assert row.receipt_id == first.receipt_id
    content = store.open(row)
    assert (content.body, content.headers, content.verified_id) == (BODY, {"content-type": "application/json"}, "d1")
    with Session(engine) as s:
        assert len(s.exec(select(Receipt).where(Receipt.delivery_id == "d1")).all()) == 2


def test_only_the_headers_a_replay_reads_are_kept(engine):
    store = KeptDeliveries(engine)
    sent = {"Content-Type": "application/cloudevents+json", "ce-id": "e1", "ce-schemaversion": "9",
            "webhook-id": "msg_1", "webhook-timestamp": "1700000000", "X-Schema-Version": "9",
            "x-api-key": "sk-live-secret", "webhook-signature": "v1,c2lnbmF0dXJl", "authorization": "Bearer t",
            "x-amz-security-token": "jwt.eyJ.sig", "x-forwarded-for": "203.0.113.7", "cookie": "s=1",
            "x-hub-signature-256": "sha256=ab", "x-custom": "anything"}
    store.reject_and_keep(_draft("d-h"), sent, BODY, "d-h", None, schema_header="X-Schema-Version")
    [row] = store.find("d-h")
    assert store.open(row).headers == {
        "content-type": "application/cloudevents+json", "ce-id": "e1", "ce-schemaversion": "9",
        "webhook-id": "msg_1", "webhook-timestamp": "1700000000", "x-schema-version": "9"}
    store.reject_and_keep(_draft("d-n"), sent, BODY + b" ", "d-n", None)  # no version header configured
    [row] = store.find("d-n")
    assert "x-schema-version" not in store.open(row).headers


def test_one_source_cannot_fill_the_store_for_everyone(engine):
    store = KeptDeliveries(engine, caps=KeptCaps(max_total_bytes=40_000))  # per source: a quarter, 10,000
    kept = [store.reject_and_keep(_draft(f"ce-{i}", "events"), {}, BODY + str(i).encode(), f"ce-{i}", None)
            for i in range(4)]
    assert [k for _, k in kept] == [True, True, False, False]  # each row is charged at least 4 KiB
    assert "kept_deliveries.max_source_bytes (10000) reached for events" in kept[2][0].message
    other, room = store.reject_and_keep(_draft("std-1", "stdhooks"), {}, BODY, "std-1", None)
    assert room is True  # another source still has its own room
    explicit = KeptDeliveries(engine, caps=KeptCaps(max_total_bytes=40_000, max_source_bytes=20_000))
    assert explicit.reject_and_keep(_draft("ce-9", "events"), {}, BODY + b"9", "ce-9", None)[1] is True


def test_an_identical_body_from_the_same_source_is_kept_once(engine):
    store = KeptDeliveries(engine)
    _, first = store.reject_and_keep(_draft("a-1"), {}, BODY, "a-1", None)
    copy, second = store.reject_and_keep(_draft("a-2"), {}, BODY, "a-2", None)  # same body, a new id
    _, elsewhere = store.reject_and_keep(_draft("b-1", "events"), {}, BODY, "b-1", None)
    assert (first, second, elsewhere) == (True, False, True)
    assert "already kept as delivery a-1" in copy.message
    assert store.find("a-2") == [] and [r.delivery_id for r in store.find("a-1")] == ["a-1"]


def test_sealed_rows_open_only_with_their_key_and_for_their_own_row(engine):
    keys = _keys()
    sealed = KeptDeliveries(engine, keys)
    sealed.reject_and_keep(_draft("d2"), {}, BODY, "d2", None)
    sealed.reject_and_keep(_draft("d3"), {}, b"other", "d3", None)
    [row] = sealed.find("d2")
    assert BODY not in row.body and row.key_id == keys.key_id
    assert sealed.open(row).body == BODY
    with pytest.raises(PayloadKeyError):
        KeptDeliveries(engine, _keys()).open(row)  # another deployment's key
    with pytest.raises(LookupError):
        KeptDeliveries(engine).open(row)  # no key configured
    [other] = sealed.find("d3")
    with pytest.raises(PayloadKeyError):  # ciphertext moved onto another row does not open
        sealed.open(_with(row, body=other.body))
    with pytest.raises(PayloadKeyError):  # nor onto another column of its own row
        sealed.open(_with(row, meta=row.body, body=row.meta))


def _with(row: KeptDelivery, **columns: bytes) -> KeptDelivery:
    return KeptDelivery.model_validate(row.model_dump() | columns)


def test_retention_removes_kept_rows_past_their_age(engine):
    store = KeptDeliveries(engine)
    store.reject_and_keep(_draft("old"), {}, BODY, "old", None)
    store.reject_and_keep(_draft("new"), {}, BODY + b" ", "new", None)  # an identical body is kept once
    with Session(engine) as s, s.begin():
        s.execute(update(KeptDelivery).where(KeptDelivery.delivery_id == "old")
                  .values(created_at=datetime.now(UTC) - timedelta(days=8)))
    assert Retention(engine).prune("kept_deliveries", timedelta(days=7)) == 1
    assert (store.find("old"), len(store.find("new"))) == ([], 1)



def _below_0017() -> str:
    """The revision 0017_schema is chained onto (whatever the integrator re-chained it to)."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    cfg = Config()
    cfg.set_main_option("script_location", str(Path(ledger.__file__).parent / "migrations"))
    return ScriptDirectory.from_config(cfg).get_revision("0017_schema").down_revision


def _tables(url: str) -> set[str]:
    engine = ledger.make_engine(url)
    try:
        return set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_migration_0017_adds_only_its_table_and_goes_back_down(empty_ledger_url):
    ledger.upgrade(empty_ledger_url, _below_0017())
    before = _tables(empty_ledger_url)
    ledger.upgrade(empty_ledger_url, "0017_schema")
    assert _tables(empty_ledger_url) - before == {"kept_deliveries"}
    ledger.downgrade(empty_ledger_url, _below_0017())
    assert _tables(empty_ledger_url) == before
