"""Group commit of plain decisions (``SqlIntakeStore.decide_many``, ``ledger/_plain_decide.py``), SQLite and PostgreSQL."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime

from sqlalchemy import event, func, select
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from intake.decision import Outcome, Reason
from intake.envelope import TriggerKind
from intake.receipts import ReceiptDraft
from ledger import Receipt, SqlIntakeStore


def _draft(version: str, delivery: str | None = None, outcome=Outcome.REJECT,
           reason=Reason.DUPLICATE_WORK, key: str | None = None) -> ReceiptDraft:
    return ReceiptDraft(outcome=outcome, reason=reason, message="test", trigger_kind=TriggerKind.EVENT,
                        source="github", received_at=datetime.now(UTC),
                        delivery_id=delivery or uuid.uuid4().hex,
                        work_key=key or f"acme/github:acme/api#{uuid.uuid4().int % 10**6}:review",
                        target_id="acme/api#1", input_version=version, tenant="acme")


def _commits(engine) -> list[int]:
    seen: list[int] = []
    event.listen(engine, "commit", lambda conn: seen.append(1))
    return seen


def _receipts(engine, ids) -> list[Receipt]:
    with Session(engine) as s:
        return list(s.exec(select(Receipt).where(Receipt.id.in_(list(ids)))).scalars())


def test_plain_drafts_are_written_in_one_transaction_and_stay_queryable(engine):
    store, drafts = SqlIntakeStore(engine), [_draft(f"sha{i}") for i in range(6)]
    commits = _commits(engine)
    answers = store.decide_many(drafts)
    assert len(commits) == 1  # one commit for the six (decided one by one: six)
    assert [(a.outcome, a.reason) for a in answers] == [(Outcome.REJECT, Reason.DUPLICATE_WORK)] * 6
    rows = {r.id: r for r in _receipts(engine, [a.receipt_id for a in answers])}
    assert [(rows[a.receipt_id].delivery_id, rows[a.receipt_id].work_key) for a in answers] == \
        [(d.delivery_id, d.work_key) for d in drafts]
    # Each delivery id is claimed: its redelivery is answered from the batch's receipt, no new row.
    again = store.decide(drafts[3])
    assert (again.reason, again.receipt_id) == (Reason.DUPLICATE_DELIVERY, answers[3].receipt_id)


def test_one_delivery_twice_in_a_batch_is_claimed_once(engine):
    store, delivery = SqlIntakeStore(engine), uuid.uuid4().hex
    first, copy, other = _draft("sha1", delivery), _draft("sha1", delivery), _draft("sha2")
    with Session(engine) as s:
        before = s.exec(select(func.count()).select_from(Receipt)).scalar_one()
    answers = store.decide_many([first, copy, other])
    assert (answers[0].reason, answers[2].reason) == (Reason.DUPLICATE_WORK, Reason.DUPLICATE_WORK)
    assert (answers[1].outcome, answers[1].reason) == (Outcome.REJECT, Reason.DUPLICATE_DELIVERY)
    assert answers[1].receipt_id == answers[0].receipt_id  # answered from the earlier one in the batch
    with Session(engine) as s:
        assert s.exec(select(func.count()).select_from(Receipt)).scalar_one() == before + 2


def test_a_draft_that_is_not_plain_is_decided_in_full_beside_the_batch(engine):
    store = SqlIntakeStore(engine)
    accept = _draft("sha1", outcome=Outcome.ACCEPT, reason=Reason.ADMITTED)
    answers = store.decide_many([_draft("sha1"), accept, _draft("sha2")])
    assert [a.outcome for a in answers] == [Outcome.REJECT, Outcome.ACCEPT, Outcome.REJECT]
    assert answers[1].generation is not None  # the full path: a version admitted, a generation bumped
    assert len(_receipts(engine, [a.receipt_id for a in answers])) == 3


def test_a_failed_batch_writes_nothing_and_each_draft_is_decided_on_its_own(engine):
    """A statement failing mid-batch (a draft with no source: NOT NULL) rolls the batch back whole;
    every draft is then decided in its own transaction and the bad one is answered its own error."""
    store = SqlIntakeStore(engine)
    good = [_draft("sha1"), _draft("sha2")]
    bad = replace(_draft("sha3"), source=None)
    commits = _commits(engine)
    answers = store.decide_many([good[0], bad, good[1]])
    assert isinstance(answers[1], IntegrityError)
    assert [answers[0].reason, answers[2].reason] == [Reason.DUPLICATE_WORK, Reason.DUPLICATE_WORK]
    assert len(commits) == 2  # the two good drafts, each on its own; the batch committed nothing
    rows = _receipts(engine, [answers[0].receipt_id, answers[2].receipt_id])
    assert sorted(r.delivery_id for r in rows) == sorted(d.delivery_id for d in good)
