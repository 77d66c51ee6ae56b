"""Kill at the gate: work in a killed scope is refused at intake, before the source is read.

A kill (``starter.py kill``, the console; recorded in ``ledger/_kills.py``) covers one work key,
one tenant, or everything. Intake asks the ledger, through :class:`KillLookup`, whether a kill in
force covers the candidate, after the scope check and before the event-age check and the
freshness read, so a killed scope costs no forge quota, no slot, no day quota and no run:

* a new delivery is rejected ``killed`` with a receipt (answered 200: decided, nothing queued).
  The delivery id is NOT claimed: the sender's redelivery (GitHub "Redeliver", a Svix retry)
  after the unkill is decided afresh instead of being a ``duplicate-delivery``;
* a deferred item re-decided by the dispatcher stays queued, untouched (no forge read, no
  attempt counted): the pass skips it (:class:`HeldByKill`) and writes one ``killed`` receipt per
  item and kill, however many passes run while the kill is in force.

The ledger checks again inside the accept's transaction (``ledger/_intake_store.py``), so a kill
committed during the freshness read refuses the accept too, and intake checks once more just
before it starts a run (an accept committed just before the kill is left ``accepted``, for the
outbox relay, which starts nothing in a killed scope either).

Lifting the kill (``unkill``) restores admission for new deliveries at once (the next lookup);
queued items are re-decided by the next dispatch pass, and ``unkill`` starts one so that is at
once rather than at the schedule's next tick (``sluicegate/operations/actions.py``).

The lookup is one indexed query per candidate; a ledger that cannot be read raises, and the
caller's ledger-down handling applies (the decide that follows needs the same ledger).
"""

from __future__ import annotations

import uuid
from typing import Protocol

from intake.decision import Outcome, Reason
from intake.envelope import Envelope, WorkCandidate
from intake.receipts import ReceiptDraft, draft_for
from sluicegate.errors import SluicegateError


class KillView(Protocol):
    """The fields of a kill in force that a refusal names (``ledger.Kill`` has them)."""

    id: str
    scope: str
    target: str
    actor: str
    reason: str


class KillLookup(Protocol):
    def active_for(self, work_key: str, tenant: str | None) -> KillView | None:
        """The oldest kill in force covering the work key, its tenant, or everything (``ledger.KillSwitch``)."""
        ...


class HeldByKill(SluicegateError):
    """A deferred item in a killed scope: it stays queued and the dispatch pass skips it."""


def held_receipt_id(item_id: str, message: str) -> str:
    """The ``killed`` receipt id of deferred item ``item_id`` under the kill ``message`` names
    (its id is in it): one receipt per item per kill, however many passes see the item."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"sluicegate:held:{item_id}:{message}").hex


def killed_message(kill: KillView) -> str:
    """What a refusal in a killed scope says: who, which scope, why, and the kill's id."""
    scope = "everything" if kill.scope == "all" else f"{kill.scope} {kill.target}"
    return f"killed by {kill.actor} ({scope}, kill {kill.id}): {kill.reason}"


def kill_refusal(kill: KillView | None, envelope: Envelope, candidate: WorkCandidate) -> ReceiptDraft | None:
    """The ``killed`` reject for a candidate a kill in force covers; ``None`` when none does."""
    if kill is None:
        return None
    return draft_for(envelope, candidate, Outcome.REJECT, Reason.KILLED, killed_message(kill)[:500])


def killed_instead(draft: ReceiptDraft, kill: KillView) -> ReceiptDraft:
    """``draft`` (an accept) turned into the ``killed`` reject: a kill committed while it was being
    decided (the ledger re-checks inside the accept's transaction)."""
    return draft.with_outcome(Outcome.REJECT, Reason.KILLED, killed_message(kill)[:500])


def is_killed(draft: ReceiptDraft) -> bool:
    """Is ``draft`` a ``killed`` refusal (recorded without claiming its delivery)?"""
    return draft.reason == Reason.KILLED


class KillGate:
    """Intake's kill check (synchronous: it reads the ledger; run it in a thread from async code)."""

    def __init__(self, lookup: KillLookup) -> None:
        self._lookup = lookup

    def refusal(self, envelope: Envelope, candidate: WorkCandidate) -> ReceiptDraft | None:
        return kill_refusal(self._lookup.active_for(candidate.work_key, candidate.tenant or None), envelope, candidate)

    def refusal_inline(self, envelope: Envelope, candidate: WorkCandidate) -> tuple[ReceiptDraft | None] | None:
        """:meth:`refusal` without leaving the event loop when the lookup can answer at once
        (``active_for_inline``: an SQLite ledger, ``ledger.KillSwitch``): ``(refusal or None,)``;
        None: call :meth:`refusal` in a thread."""
        inline = getattr(self._lookup, "active_for_inline", None)
        found = inline(candidate.work_key, candidate.tenant or None) if inline is not None else None
        return None if found is None else (kill_refusal(found[0], envelope, candidate),)
