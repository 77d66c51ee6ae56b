"""The capacity step of ``SqlIntakeStore.decide``: queue order, slots, and the deferred queue.

Called inside the decide transaction for an accept. Returns the (possibly changed) draft:
still an accept when capacity was taken, a ``duplicate-work`` reject when the same version
already waits in the queue, or a defer — in which case the item is (re)queued durably in
the same transaction, so the receipt and the queue entry can never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlmodel import Session

from intake.admission_rules import already_queued, capacity_deferral, deferral_delay, duplicate_work
from intake.capacity import Block
from intake.ports import CapacityContext
from intake.receipts import ReceiptDraft
from ledger import _deferred
from ledger._capacity import CapacityRefused, acquire, holds_slots

@dataclass
class CapacityOutcome:
    draft: ReceiptDraft
    deferred_item: str | None = None
    requeued: bool = False
    """A resumed item deferred again: no new receipt, the item's own is kept."""
    superseded_item: str | None = None


def _already_queued(draft: ReceiptDraft, queued, resume_item: str | None) -> ReceiptDraft | None:
    if queued is None:
        return None
    return already_queued(draft, queued.id, queued.input_version, resume_item)


def queue_unread(s: Session, draft: ReceiptDraft, ctx: CapacityContext, receipt_id: str,
                 blocked: str | None) -> ReceiptDraft:
    """A delivery whose source could not be read (``draft`` is its defer): queue it, unless its
    version is already queued or admitted (``blocked``: why) — then it is ``duplicate-work``."""
    if blocked is not None:
        return duplicate_work(draft, blocked)
    queued = _deferred.waiting_row(s, draft.tenant or "", draft.work_key)
    if (duplicate := _already_queued(draft, queued, None)) is not None:
        return duplicate
    _deferred.enqueue(s, tenant=draft.tenant or "", source=draft.source, work_key=draft.work_key,
                      input_version=draft.input_version, request=ctx.request, block=Block.SOURCE, blocked_key=None,
                      retry_after=draft.retry_after_seconds or ctx.retry_after_seconds, receipt_id=receipt_id,
                      payload=ctx.payload)
    return draft


def apply_capacity(s: Session, draft: ReceiptDraft, ctx: CapacityContext, receipt_id: str) -> CapacityOutcome:
    # Locked before any counter or the work item: the dispatcher re-deciding that item locks it first
    # (``_resumed_item_changed``), and a delivery that took counters and the work item before marking
    # it superseded or replacing its payload deadlocked with it (PostgreSQL aborted the API's side).
    queued = _deferred.waiting_row(s, draft.tenant or "", draft.work_key, lock=True)
    # An item queued because its source could not be read waits on nothing this delivery did not
    # just check: it takes the item over (admitted now, or the item re-queued on its limit).
    unread = queued is not None and queued.blocked_on == str(Block.SOURCE) and queued.id != ctx.resume_item
    if not unread and (duplicate := _already_queued(draft, queued, ctx.resume_item)) is not None:
        return CapacityOutcome(duplicate)
    refused = _refusal(s, draft, ctx)
    if refused is None:
        superseded = queued.id if queued is not None and queued.id != ctx.resume_item else None
        return CapacityOutcome(draft, superseded_item=superseded)
    retry = deferral_delay(refused.block, refused.retry_after, ctx.retry_after_seconds)
    deferred = capacity_deferral(draft, refused.block, str(refused), retry)
    if ctx.resume_item is not None:
        _deferred.redefer(s, ctx.resume_item, refused.block, refused.key, retry)
        return CapacityOutcome(deferred, ctx.resume_item, requeued=True)
    item = _deferred.enqueue(s, tenant=draft.tenant or "", source=draft.source, work_key=draft.work_key,
                             input_version=draft.input_version, request=ctx.request, block=refused.block,
                             blocked_key=refused.key, retry_after=retry, receipt_id=receipt_id,
                             payload=ctx.payload)
    return CapacityOutcome(deferred, item.id)


def _refusal(s: Session, draft: ReceiptDraft, ctx: CapacityContext) -> CapacityRefused | None:
    if holds_slots(s, draft.work_key):
        return None  # a newer version for a running item: it reuses the run's slots (supersede)
    if ctx.breaker is not None:
        block, retry, message = ctx.breaker
        return CapacityRefused(block, None, message, retry)
    if ctx.resume_item is None:
        rate = ctx.request.rate.bucket if ctx.request.rate is not None else None
        ahead = _deferred.queue_ahead(s, ctx.request.tenant, tuple(c.key for c in ctx.request.slots), rate)
        if ahead is not None and ahead.work_key != draft.work_key:
            return CapacityRefused(Block(ahead.blocked_on), ahead.blocked_key,
                                   f"earlier work waits in the queue ({ahead.blocked_on})")
    try:
        acquire(s, draft.work_key, ctx.request, holds_checked=True)
    except CapacityRefused as refused:
        return refused
    return None
