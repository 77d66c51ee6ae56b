"""A group commit of plain decisions (``SqlIntakeStore.decide_many``) never lets one draft's failure
answer the others: any statement failing rolls the batch back whole and each draft is decided alone,
whatever the database's error class (PostgreSQL: ``DataError`` for a value it cannot store)."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from sqlalchemy.exc import DataError

import ledger
from intake.decision import Outcome, Reason
from intake.envelope import TriggerKind
from intake.receipts import ReceiptDraft
from ledger import SqlIntakeStore

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
