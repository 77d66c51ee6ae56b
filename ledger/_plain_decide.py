"""A plain decision's transaction: claim the delivery and write the receipt, nothing else.

Most decisions of a duplicate storm change nothing in the ledger but these two rows: a
``duplicate-work`` decided by the early repeat check, ``out-of-scope``, ``too-old``, ``unknown-task``,
a delivery that asks for no work. ``SqlIntakeStore.decide`` hands every reject and no-work of a new
trigger (no capacity context, no deferred item, not ``killed``, not the ``target-closed`` tombstone)
to :func:`decide_plain`: the same two statements in the same one transaction (SQLite ``BEGIN
IMMEDIATE``), written with Core statements built once instead of a Session and per-call
expressions, which cost several times the database's own work (profiled on SQLite: ~1 ms of CPU per
decision, of which the three statements and the commit were ~0.4).

Hand-written because it is the ledger write itself (it must be one transaction with the claim).
Same answers as the general path: a claim lost to the same delivery id or body (a concurrent
redelivery or replay) writes nothing and is answered from the winner's row.

Group commit (:func:`decide_plain_many`): the plain decisions that arrive while one transaction is
committing (``intake/decide_batch.py`` gathers them) are written in the next one, each still its own
claim-then-receipt pair, in (source, delivery id) order (:func:`claim_order`), after locking the
batch's body digests in one global order (``ledger/_digest_lock.py``): two replicas' batches never
wait on each other's claims in a cycle; a claim lost to a delivery earlier in the same batch is
answered from that delivery's row, which the transaction already sees. Every requester is answered
only after the commit, so no verified delivery's receipt is lost; a storm of duplicates pays one
``BEGIN IMMEDIATE`` / commit (and one WAL append of the touched pages) per batch instead of per
delivery.
"""

from __future__ import annotations

from typing import Callable

from sqlalchemy import insert
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine

from intake.admission_rules import leaves_delivery_unclaimed
from intake.decision import IntakeDecision, Outcome, Reason
from intake.kill_gate import is_killed
from intake.receipts import ReceiptDraft
from ledger._digest_lock import lock_digests
from ledger._models import Delivery, Receipt
from ledger._prepared import Prepared
from ledger._repeats import find_repeat, original_answer

_DELIVERIES = Delivery.__table__  # type: ignore[attr-defined]  # set on table models; not in SQLModel's types
_RECEIPT = insert(Receipt.__table__)  # type: ignore[attr-defined]
CLAIM = {name: dialect.insert(_DELIVERIES).on_conflict_do_nothing().returning(_DELIVERIES.c.delivery_id)
          for name, dialect in (("sqlite", sqlite), ("postgresql", postgresql))}
"""``INSERT ... ON CONFLICT DO NOTHING RETURNING delivery_id`` (any unique key: the id or the digest)."""
CLAIM_DELIVERY, INSERT_RECEIPT = Prepared(CLAIM), Prepared(_RECEIPT)
"""The two statements on the DBAPI cursor of the caller's transaction (``ledger/_prepared.py``)."""
_PLAIN_OUTCOMES = frozenset({Outcome.REJECT, Outcome.NO_WORK})


def is_plain(draft: ReceiptDraft, has_capacity: bool, resume: str | None) -> bool:
    """Does deciding ``draft`` write only the delivery claim and the receipt?"""
    return (draft.outcome in _PLAIN_OUTCOMES and not has_capacity and resume is None and not is_killed(draft)
            and draft.reason != Reason.TARGET_CLOSED)


def decide_plain(engine: Engine, draft: ReceiptDraft, row: dict,
                 lost: Callable[[ReceiptDraft], IntakeDecision]) -> IntakeDecision | None:
    """Claim ``draft``'s delivery (if it has one) and insert receipt ``row`` in one transaction.
    Returns None when written (the caller answers from ``row``); the winner's answer when the claim
    was lost (nothing written), or ``lost(draft)`` if the winner cannot be seen."""
    return decide_plain_many(engine, [(draft, row)], lost)[0]


def decide_plain_many(engine: Engine, items: list[tuple[ReceiptDraft, dict]],
                      lost: Callable[[ReceiptDraft], IntakeDecision]) -> list[IntakeDecision | None]:
    """:func:`decide_plain` for every ``(draft, row)`` of ``items``, all in ONE transaction (group
    commit): per item None when written, else the answer of the delivery that holds its claim. Raises
    (and writes nothing at all) if any statement fails: the caller decides the items one by one."""
    answers: list[IntakeDecision | None] = [None] * len(items)
    order = claim_order(items)
    claims = [i for i in order if _claims(items[i][0])]
    with engine.begin() as conn:
        if len(claims) > 1:  # the digests first, in one global order (ledger/_digest_lock.py)
            lock_digests(conn, ((items[i][0].source, items[i][0].body_digest) for i in claims))
        for i in order:
            draft, row = items[i]
            if _claims(draft):
                claimed = CLAIM_DELIVERY.first(conn, {
                    "source": draft.source, "delivery_id": draft.delivery_id, "received_at": draft.received_at,
                    "receipt_id": row["id"], "body_digest": draft.body_digest})
                if claimed is None:
                    answers[i] = original_answer(find_repeat(conn, draft), draft) or lost(draft)
                    continue
            INSERT_RECEIPT.run(conn, row)
    return answers


def _claims(draft: ReceiptDraft) -> bool:
    return draft.delivery_id is not None and not leaves_delivery_unclaimed(draft)


def claim_order(items: list[tuple[ReceiptDraft, dict]]) -> list[int]:
    """The indexes of ``items`` in (source, delivery id) order, the order every batch takes its claims
    in: two replicas' batches claiming the same redelivered ids, each in its own arrival order, held one
    id each while waiting for the other's (PostgreSQL: a deadlock, one batch aborted after
    ``deadlock_timeout``). Stable: of one id twice in a batch the earlier claims it, the later is
    answered from its row."""
    return sorted(range(len(items)), key=lambda i: (items[i][0].source or "", items[i][0].delivery_id or ""))
