"""A group commit of plain decisions (``SqlIntakeStore.decide_many``) never lets one draft's failure
answer the others: any statement failing rolls the batch back whole and each draft is decided alone,
whatever the database's error class (PostgreSQL: ``DataError`` for a value it cannot store)."""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DataError

import ledger
from intake.decision import Outcome, Reason
from intake.envelope import TriggerKind
from intake.receipts import ReceiptDraft
from ledger import SqlIntakeStore
from ledger._intake_store import _receipt_row
from ledger._plain_decide import decide_plain_many
from tests.support.pause_at_statement import waiting_on_a_lock

pytestmark = pytest.mark.postgres


def _draft(version: str) -> ReceiptDraft:
    return ReceiptDraft(outcome=Outcome.REJECT, reason=Reason.DUPLICATE_WORK, message="test",
                        trigger_kind=TriggerKind.EVENT, source="github", received_at=datetime.now(UTC),
                        delivery_id=uuid.uuid4().hex,
                        work_key=f"acme/github:acme/api#{uuid.uuid4().int % 10**6}:review",
                        target_id="acme/api#1", input_version=version, tenant="acme")


def test_a_data_error_in_one_draft_is_that_drafts_alone(postgres_url):
    """A NUL character (PostgreSQL text cannot hold one: DataError, not an IntegrityError or an
    OperationalError) in one draft's message. It used to escape ``decide_many`` whole, so every
    requester of the batch was answered that draft's error (a 503 each) and nothing of theirs written."""
    engine = ledger.make_engine(postgres_url)
    try:
        store = SqlIntakeStore(engine)
        bad = replace(_draft("sha2"), message="title with a \x00 in it")
        with pytest.raises(DataError):
            store.decide(bad)  # alone, the error is its own (as before batching)
        good = [_draft("sha1"), _draft("sha3")]
        answers = store.decide_many([good[0], replace(bad, delivery_id=uuid.uuid4().hex), good[1]])
        assert isinstance(answers[1], DataError)
        assert [(a.outcome, a.reason) for a in (answers[0], answers[2])] == [(Outcome.REJECT, Reason.DUPLICATE_WORK)] * 2
        # written: each redelivery is answered from its receipt
        assert [store.decide(d).receipt_id for d in good] == [answers[0].receipt_id, answers[2].receipt_id]
    finally:
        engine.dispose()


def _waiting_on_locks(engine, count: int, threads: list[threading.Thread]) -> None:
    for _ in range(500):
        if waiting_on_a_lock(engine) >= count or not all(t.is_alive() for t in threads):
            return
        time.sleep(0.02)


def _two_batches_racing(engine, other, held: list[ReceiptDraft], a: list[ReceiptDraft],
                        b: list[ReceiptDraft]) -> tuple[list, list]:
    """Batches ``a`` and ``b`` group-committed by two threads (two replicas) while ``other`` holds the
    claims of ``held``'s delivery ids; once both wait on locks, ``other`` rolls back. Each batch's answers,
    after asserting that neither raised (a deadlock aborts one)."""
    store = SqlIntakeStore(engine)
    tx = other.begin()
    for draft in held:
        other.execute(text("INSERT INTO deliveries (source, delivery_id, received_at, receipt_id) "
                           "VALUES ('github', :d, now(), 'other')"), {"d": draft.delivery_id})
    results: dict[str, object] = {}

    def batch(name: str, drafts: list[ReceiptDraft]) -> None:
        rows = [_receipt_row(d, uuid.uuid4().hex, None, "p") for d in drafts]
        try:
            results[name] = decide_plain_many(engine, list(zip(drafts, rows, strict=True)),
                                              store._already_claimed_unknown)
        except BaseException as exc:  # noqa: BLE001 - asserted below
            results[name] = exc

    threads = [threading.Thread(target=batch, args=("A", a)), threading.Thread(target=batch, args=("B", b))]
    for thread in threads:
        thread.start()
    _waiting_on_locks(engine, 2, threads)  # both batches wait (on the held claims, or one on the other)
    tx.rollback()
    for thread in threads:
        thread.join(30)
    errors = {k: v for k, v in results.items() if isinstance(v, BaseException)}
    assert errors == {}, {k: f"{type(v).__name__}: {v}" for k, v in errors.items()}
    ra, rb = results["A"], results["B"]
    assert isinstance(ra, list) and isinstance(rb, list)
    return ra, rb


def test_two_replicas_batches_of_the_same_deliveries_in_opposite_orders_do_not_deadlock(postgres_url):
    """Two API replicas each batch the same two redelivered ids, in the order each received them
    (A: d1 then d2, B: d2 then d1). Claimed in arrival order, A held d1 waiting for d2 while B held d2
    waiting for d1: PostgreSQL aborted one batch after its deadlock timeout (its requesters decided
    again one by one, a second later). Claimed in (source, delivery id) order, B waits for A and is
    answered from A's rows. A third transaction holding one claim of each batch (x, y) makes both
    batches take their first claim before either reaches the other's."""
    engine = ledger.make_engine(postgres_url)
    other = engine.connect()
    try:
        run = uuid.uuid4().hex[:8]
        d1, d2, x, y = (replace(_draft("sha"), delivery_id=f"{run}-{n}") for n in ("d1", "d2", "x", "y"))
        a, b = _two_batches_racing(engine, other, [x, y], [d1, x, d2], [d2, y, d1])  # old order: A on x, B on y
        # one batch claimed both ids; the other's two were answered from those rows (in its own order)
        written, repeated = (a, b) if a[0] is None else (b, a)
        assert written == [None, None, None]
        assert [r.reason for r in repeated if r is not None] == [Reason.DUPLICATE_DELIVERY] * 2
    finally:
        other.close()
        engine.dispose()


def test_two_replicas_batches_of_replayed_bodies_in_opposite_digest_orders_do_not_deadlock(postgres_url):
    """A claim takes two unique keys: the delivery id and the (source, body digest). Claims ordered by
    delivery id still take the DIGESTS in any order: an attacker replaying two captured signed bodies
    under fresh delivery ids to two replicas at once (A: 1a=D1, 1z=D2; B: 2a=D2, 2z=D1) made A hold D1
    waiting for D2 while B held D2 waiting for D1: PostgreSQL aborted one batch after its deadlock
    timeout, every requester of it decided again alone a second later (DeadlockDetected on the old
    code). A third transaction holding 1x and 2y makes each batch take its first claim before its last."""
    engine = ledger.make_engine(postgres_url)
    other = engine.connect()
    try:
        run = uuid.uuid4().hex[:8]
        d1, d2 = (f"{run}{n}".ljust(64, "0") for n in ("d1", "d2"))

        def draft(name: str, digest: str | None) -> ReceiptDraft:
            return replace(_draft("sha"), delivery_id=f"{run}-{name}", body_digest=digest)

        a = [draft("1a", d1), draft("1x", None), draft("1z", d2)]
        b = [draft("2a", d2), draft("2y", None), draft("2z", d1)]
        ra, rb = _two_batches_racing(engine, other, [a[1], b[1]], a, b)
        # one batch claimed both digests; the other's two replays were answered from those rows
        written, replayed = (ra, rb) if ra[0] is None else (rb, ra)
        assert written == [None, None, None]
        assert [r.reason if r is not None else None for r in replayed] == [Reason.REPLAYED_BODY, None,
                                                                           Reason.REPLAYED_BODY]
    finally:
        other.close()
        engine.dispose()
