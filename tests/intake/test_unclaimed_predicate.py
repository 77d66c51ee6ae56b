"""One predicate decides which refusals leave their delivery id unclaimed
(``intake.admission_rules.leaves_delivery_unclaimed``), and the ledger's two write paths (the plain
one, ``ledger/_plain_decide.py``, and the general one) and the in-process delivery answers
(``intake/seen_deliveries.py``) all follow it: a decision is kept for a before-the-parse
``duplicate-delivery`` answer exactly when the ledger claimed its delivery id. A private copy in
either place answers a redelivery ``duplicate-delivery`` from the cache that the ledger would decide
afresh (or the reverse). Review2: a parallel branch makes ``future-event`` unclaimed too."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from sqlmodel import Session, select

from intake import admission_rules
from intake.decision import Outcome, Reason
from intake.envelope import Envelope, PullRequestRef, TriggerKind
from intake.identity import review_candidate
from intake.receipts import draft_for
from intake.seen_deliveries import SeenDeliveries
from ledger import Delivery, SqlIntakeStore

_REPEATS = {Reason.DUPLICATE_DELIVERY, Reason.REPLAYED_BODY}  # answers about another delivery, never originals


def _claimed(engine, delivery_id: str) -> bool:
    with Session(engine) as s:
        return s.exec(select(Delivery).where(Delivery.delivery_id == delivery_id)).first() is not None


def _decide_and_keep(engine, reason: Reason) -> tuple[bool, bool]:
    """(did the ledger claim the delivery id, did the in-process answers keep the decision)."""
    now = datetime.now(UTC)
    envelope = Envelope(id=f"unclaimed-{uuid.uuid4()}", source="github", type="pull_request.synchronize",
                        subject="acme/x#1", time=now, received_at=now, trigger_kind=TriggerKind.EVENT, tenant="acme")
    candidate = review_candidate("acme", PullRequestRef("acme", f"u-{uuid.uuid4().hex[:8]}", 1), "a" * 40)
    decision = SqlIntakeStore(engine).decide(draft_for(envelope, candidate, Outcome.REJECT, reason, "refused"))
    seen = SeenDeliveries()
    seen.decided(envelope.source, envelope.id, decision)
    return _claimed(engine, envelope.id), seen.answer(envelope.source, envelope.id) is not None


@pytest.mark.parametrize("reason", sorted(set(Reason) - _REPEATS))
def test_kept_in_process_exactly_when_the_ledger_claims_the_delivery(engine, reason):
    claimed, kept = _decide_and_keep(engine, reason)
    assert kept == claimed
    assert claimed == (not admission_rules.leaves_delivery_unclaimed(
        draft_for(Envelope(id="x", source="s", type="t", subject=None, time=None, received_at=datetime.now(UTC),
                           trigger_kind=TriggerKind.EVENT, tenant="acme"), None, Outcome.REJECT, reason, "m")))


def test_one_more_unclaimed_reason_is_followed_everywhere(engine, monkeypatch):
    """What the parallel branch does (``future-event`` unclaimed), through the shared set only: the
    plain path claims nothing, the general path claims nothing, and nothing is kept in process."""
    monkeypatch.setattr(admission_rules, "UNCLAIMED_REASONS",
                        admission_rules.UNCLAIMED_REASONS | {Reason.FUTURE_EVENT, Reason.TARGET_CLOSED})
    for reason in (Reason.FUTURE_EVENT, Reason.TARGET_CLOSED):  # plain path, general path
        assert _decide_and_keep(engine, reason) == (False, False)
