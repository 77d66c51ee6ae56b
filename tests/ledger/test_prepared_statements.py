"""Statements run on the DBAPI cursor (``ledger/_prepared.py``) behave as SQLAlchemy's execution did.

What the accept path relies on, on SQLite and PostgreSQL: the same stored values (a receipt written both
ways reads back the same, timestamps and JSON included), typed results (a timestamp comes back a
datetime), driver errors as SQLAlchemy's (``decide`` retries an ``IntegrityError``; the API answers a
ledger error 503), a missing parameter refused rather than written NULL, cursor listeners called (the
race tests pause at statements by their text), and the queue-ahead read built per number of keys.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from sqlalchemy import event, text
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from intake.capacity import Block, CapacityRequest
from intake.decision import Outcome, Reason
from intake.envelope import TriggerKind
from intake.receipts import ReceiptDraft
from ledger import make_engine
from ledger._accept_sql import INSERT_RECEIPT, INSERT_VERSION, LOCK_VERSION, RECEIPT_INSERT
from ledger._capacity import _ADD_BUCKET, _BUCKET_LOCKED
from ledger._deferred import enqueue, queue_ahead
from ledger._intake_store import _receipt_row


def _row(engine, table: str, key: str, value: str) -> dict:
    with engine.connect() as c:
        return dict(c.execute(text(f"SELECT * FROM {table} WHERE {key} = :v"), {"v": value}).one()._mapping)


def test_a_receipt_written_on_the_cursor_reads_back_as_sqlalchemy_wrote_it(engine):
    draft = ReceiptDraft(outcome=Outcome.ACCEPT, reason=Reason.ADMITTED, message="admitting", override="why",
                         trigger_kind=TriggerKind.EVENT, source="github", received_at=datetime.now(UTC),
                         delivery_id=str(uuid.uuid4()), tenant="acme", work_key=f"acme/{uuid.uuid4().hex}",
                         input_version="v1", emitted_at=datetime(2026, 1, 2, 3, 4, 5, 678901, UTC))
    prepared, core = _receipt_row(draft, uuid.uuid4().hex, 7, "p1"), _receipt_row(draft, uuid.uuid4().hex, 7, "p1")
    prepared.update(operation_keys=["a", "b"], external_ids=["x"])
    core.update(operation_keys=["a", "b"], external_ids=["x"], created_at=prepared["created_at"])
    with engine.begin() as conn:
        INSERT_RECEIPT.run(conn, prepared)
        conn.execute(RECEIPT_INSERT, core)
    ours, theirs = _row(engine, "receipts", "id", prepared["id"]), _row(engine, "receipts", "id", core["id"])
    assert ours.pop("id") != theirs.pop("id")
    assert ours == theirs  # the same text for every timestamp (SQLite) and the same JSON


def test_a_unique_violation_on_the_cursor_is_sqlalchemys_integrity_error(engine):
    row = {"work_key": f"k/{uuid.uuid4().hex}", "input_version": "v1", "generation": 1, "status": "accepted",
           "receipt_id": "r", "workflow_id": None, "run_id": None, "result": None,
           "updated_at": datetime.now(UTC), "readmissions": 0}
    with pytest.raises(IntegrityError), engine.begin() as conn:  # what decide's race retry catches
        INSERT_VERSION.run(conn, row)
        INSERT_VERSION.run(conn, row)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM work_versions WHERE work_key = :k"),
                            {"k": row["work_key"]}).scalar_one() == 0  # rolled back whole


def test_a_missing_parameter_is_refused_not_read_as_null(engine):
    with engine.begin() as conn, pytest.raises(ValueError, match="ver"):
        LOCK_VERSION.first(conn, {"wk": "some/key"})


def test_results_are_typed_and_cursor_listeners_see_the_statements(engine):
    seen: list[str] = []

    def record(_conn, _cursor, statement, *_args) -> None:
        seen.append(statement)

    bucket = f"rate:{uuid.uuid4().hex}"
    now = datetime.now(UTC)
    event.listen(engine, "before_cursor_execute", record)
    try:
        with engine.begin() as conn:
            _ADD_BUCKET.run(conn, {"key": bucket, "tokens": 2.5, "updated_at": now})
            tokens, updated_at = _BUCKET_LOCKED.first(conn, {"k": bucket})
    finally:
        event.remove(engine, "before_cursor_execute", record)
    assert tokens == 2.5 and isinstance(updated_at, datetime)
    assert updated_at.replace(tzinfo=UTC) == now or updated_at == now
    assert any(s.startswith("INSERT INTO rate_buckets") for s in seen)
    assert any(s.startswith("SELECT rate_buckets.tokens") for s in seen)


@pytest.mark.parametrize("keys, ahead", [
    ((), None), (("key:a",), "key:a"), (("key:c",), None), (("key:c", "key:b"), "key:b"),
    (("key:c", "key:d", "key:e", "key:b"), "key:b"), (("global", "tenant:t", "key:c"), None)])
def test_queue_ahead_sees_the_items_waiting_on_any_of_the_request_keys(fresh_ledger_url, keys, ahead):
    engine = make_engine(fresh_ledger_url)
    try:
        with Session(engine) as s, s.begin():
            for n, key in enumerate(("key:a", "key:b")):
                enqueue(s, tenant="other", source="github", work_key=f"w{n}", input_version="v1",
                        request=CapacityRequest("other", 3), block=Block.KEY, blocked_key=key, retry_after=30,
                        receipt_id=f"r{n}", payload={})
        with Session(engine) as s, s.begin():
            row = queue_ahead(s, "t", keys, "rate:t")
        assert (row.blocked_key if row is not None else None) == ahead
    finally:
        engine.dispose()
