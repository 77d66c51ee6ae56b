"""The early repeat answer: what the ledger alone says about a trigger before the forge is read.

``IntakeStore.find_repeat`` runs one read-only statement right after the signature (see
``ledger/_repeats.py``) and returns a :class:`Repeat`:

* ``seen`` — the delivery (or its signed body) was already decided: answered from the original,
  nothing written, no forge read;
* ``blocking`` — the (work key, version) is already admitted, running, queued or done: the
  delivery is decided ``duplicate-work`` from the ledger with no forge read (a rejection does not
  need freshness), and still recorded (delivery claim + receipt) like every other decision.

Known difference from the full path: an event for a version that is already taken is
``duplicate-work`` even when the forge would now say ``stale-version`` or ``target-closed``
(a pull request closed after its head was admitted). Both are rejections of a version that will
not run again; only the reason differs. A ``closed`` event itself never takes the early path
(:func:`may_decide_early`): its ``target-closed`` decision writes the tombstone (the work item's
reset) after which automatic triggers may run a ``cancelled`` version of the reopened pull request
again, so it is always read from the forge. The tombstone never unblocks a ``done`` version (the
same head was already reviewed; ``ledger/_intake_store.py``, ``_blocking_reason``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from intake.admission_rules import duplicate_work as duplicate_work_rule
from intake.decision import IntakeDecision, Outcome, Reason
from intake.envelope import Envelope, WorkCandidate
from intake.receipts import ReceiptDraft, draft_for

if TYPE_CHECKING:  # ports names Repeat: a run-time import would be a cycle
    from intake.ports import IntakeStore


# Events whose full decision changes the ledger beyond a receipt (the target-closed tombstone).
_RESETTING_EVENTS = frozenset({"pull_request.closed"})


def may_decide_early(envelope: Envelope) -> bool:
    """May a taken version be answered ``duplicate-work`` without the forge? Not for a close event."""
    return envelope.type not in _RESETTING_EVENTS


@dataclass(frozen=True)
class Repeat:
    """The ledger's early answer about one trigger."""

    seen: IntakeDecision | None = None
    """The original delivery's decision when this delivery id (or its body) was already decided."""
    blocking: str | None = None
    """Why the (work key, version) is already admitted, running, queued or done; None: decide fully."""
    seen_final: bool = False
    """``seen`` answers a repeat of this delivery id whose original can no longer change
    (``intake/seen_deliveries.py``): it may be kept in process."""
    unstarted: tuple[str, str] | None = None
    """(work key, version) accepted but never started, as the lookup saw it: the caller starts it
    unless this process is starting it now (a failed start's repeat; ``ledger/_repeats.py``)."""


def duplicate_work(envelope: Envelope, candidate: WorkCandidate, blocking: str) -> ReceiptDraft:
    """The ``duplicate-work`` receipt for a version the ledger already holds (no forge read)."""
    return duplicate_work_rule(draft_for(envelope, candidate, Outcome.REJECT, Reason.DUPLICATE_WORK, ""),
                               f"{blocking}; decided from the ledger without a forge read")


async def look_up(store: IntakeStore, probe: ReceiptDraft) -> Repeat:
    """``store.find_repeat(probe)`` (``store``: an ``intake.ports.IntakeStore``). A store that can read
    locally (``find_repeat_inline``: SQLite, one indexed statement of some tens of µs, less than the
    thread hop around it) answers on the event loop unless it would wait (a lock, its connection in
    use: it returns None at once); otherwise, and always on PostgreSQL (a network round trip), the
    read runs in a worker thread so the event loop never waits on the database."""
    inline: Callable[[ReceiptDraft], Repeat | None] | None = getattr(store, "find_repeat_inline", None)
    if inline is not None and (repeat := inline(probe)) is not None:
        return repeat
    return await asyncio.to_thread(store.find_repeat, probe)
