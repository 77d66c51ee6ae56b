"""Committed delivery answers kept in process: an authenticated redelivery answered before its body is parsed.

A redelivery (the same ``X-GitHub-Delivery`` id, GitHub's "Redeliver", a sender's retry) is
answered ``duplicate-delivery`` with the original receipt. The ledger's early repeat check
(``ledger/_repeats.py``) finds it with one indexed read, but only after the body was parsed (JSON,
pydantic) into an envelope. :class:`SeenDeliveries` remembers, per ``(source, delivery id)``, the
original's answer once it is **committed and final**, so the API can answer a repeat right after the
signature holds (bound, then authenticate, then this lookup, then parse): no parse, no ledger read.

Why this is safe without invalidation:

* Only what the ledger committed goes in: the decision ``IntakeService.submit`` returned for a
  delivery it claimed (after the transaction and, for an accept, after the run was started and
  recorded), or an original the repeat check read back from the ledger.
* Only *final* answers go in: a ``reject`` or ``no-work`` original (nothing ever admits, queues or
  changes its receipt), or an ``accept`` whose run is recorded (``mark_admitted`` writes the
  workflow and run ids once). An accept still pending admission, a ``defer`` (its ``queued`` state
  changes when the item leaves the queue) and a refusal whose delivery id the ledger deliberately does
  not claim (``killed``: a redelivery after the unkill is decided afresh) never do; the latter is the
  ledger's own predicate, ``intake.admission_rules.leaves_delivery_unclaimed``, never a copy. So another API replica, or the
  ledger itself, can never hold a different answer; a miss simply falls through to the ledger.
* Entries live ``ttl_seconds`` (at most the delivery dedupe window): a delivery id the ledger
  prunes is forgotten here too, at most that much later. ``maxsize`` bounds memory (LRU beyond it).
* Keys are only ever looked up or stored after the sender was authenticated: unauthenticated
  traffic cannot fill or probe it.

Not thread-safe: one instance per ``IntakeService``, used from its event loop only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from cachetools import TTLCache

from intake.admission_rules import leaves_delivery_unclaimed, redelivery_message
from intake.decision import IntakeDecision, Outcome, Reason

DEFAULT_MAXSIZE = 20_000
DEFAULT_TTL_SECONDS = 60.0
_REPEATS = frozenset({Reason.DUPLICATE_DELIVERY, Reason.REPLAYED_BODY})


@dataclass(frozen=True)
class _Original:
    """What a repeat answer says about the original delivery (the fields ``original_answer`` reads)."""

    receipt_id: str
    work_key: str | None
    input_version: str | None
    generation: int | None
    workflow_id: str | None
    run_id: str | None


def final(outcome: str, workflow_id: str | None, queued: bool) -> bool:
    """Can the ledger's answer about this original never change? (See the module docstring.)"""
    if queued:
        return False
    return outcome in (Outcome.REJECT, Outcome.NO_WORK) or (outcome == Outcome.ACCEPT and workflow_id is not None)


class SeenDeliveries:
    """A bounded, expiring map ``(source, delivery id)`` -> the committed, final original answer."""

    def __init__(self, maxsize: int = DEFAULT_MAXSIZE, ttl_seconds: float = DEFAULT_TTL_SECONDS,
                 timer: Callable[[], float] = time.monotonic) -> None:
        """``maxsize`` 0 (or ``ttl_seconds`` 0): keep nothing, every repeat asks the ledger."""
        self._cache: TTLCache[tuple[str, str], _Original] | None = \
            TTLCache(maxsize, ttl_seconds, timer=timer) if maxsize > 0 and ttl_seconds > 0 else None

    def answer(self, source: str, delivery_id: str) -> IntakeDecision | None:
        """The ``duplicate-delivery`` answer for an authenticated redelivery, or None (ask the ledger)."""
        if self._cache is None:
            return None
        original = self._cache.get((source, delivery_id))
        if original is None:
            return None
        return IntakeDecision(Outcome.REJECT, str(Reason.DUPLICATE_DELIVERY), redelivery_message(delivery_id, source),
                              receipt_id=original.receipt_id,
                              work_key=original.work_key, input_version=original.input_version,
                              generation=original.generation, workflow_id=original.workflow_id,
                              run_id=original.run_id, queued=False)

    def decided(self, source: str, delivery_id: str | None, decision: IntakeDecision) -> None:
        """Remember ``decision``, the committed first decision of a delivery intake claimed, if final."""
        if self._cache is None or delivery_id is None or not decision.receipt_id:
            return
        if str(decision.reason) in _REPEATS or leaves_delivery_unclaimed(decision):
            return  # a repeat is not the original; a killed reject (the ledger's own predicate) claims nothing
        if final(str(decision.outcome), decision.workflow_id, decision.outcome == Outcome.DEFER):
            self._store(source, delivery_id, decision)

    def read_back(self, source: str, delivery_id: str, original: IntakeDecision, original_final: bool) -> None:
        """Remember an original the ledger's repeat check read (``original``: its repeat answer)."""
        if self._cache is not None and original_final and original.receipt_id:
            self._store(source, delivery_id, original)

    def _store(self, source: str, delivery_id: str, d: IntakeDecision) -> None:
        assert self._cache is not None
        self._cache[(source, delivery_id)] = _Original(d.receipt_id, d.work_key, d.input_version, d.generation,
                                                       d.workflow_id, d.run_id)
