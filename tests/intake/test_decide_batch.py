"""``intake/decide_batch.py``: decisions arriving while a batch is written form the next batch; each
requester is answered after its batch, with its own answer or its own error."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime

import pytest

from intake.decide_batch import DecideBatcher
from intake.decision import IntakeDecision, Outcome, Reason
from intake.envelope import TriggerKind
from intake.receipts import ACTIVITY_ATTEMPT, ReceiptDraft


def _draft(n: int) -> ReceiptDraft:
    return ReceiptDraft(outcome=Outcome.REJECT, reason=Reason.DUPLICATE_WORK, message=str(n),
                        trigger_kind=TriggerKind.EVENT, source="github", received_at=datetime.now(UTC),
                        delivery_id=f"d{n}", work_key="k", input_version="v")


class _Ledger:
    """A stand-in store: records each batch; the first batch is held until released."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.attempts: list[int | None] = []
        self.release = threading.Event()
        self.writing = threading.Event()

    def decide_many(self, drafts: list[ReceiptDraft]) -> list[IntakeDecision | Exception]:
        self.writing.set()
        self.release.wait(5)
        self.batches.append([d.message for d in drafts])
        self.attempts += [d.activity_attempt for d in drafts]
        return [ValueError(d.message) if d.message == "bad" else
                IntakeDecision(Outcome.REJECT, str(d.reason), d.message, receipt_id=f"r{d.message}") for d in drafts]


async def _until(event: threading.Event) -> None:
    while not event.is_set():
        await asyncio.sleep(0.001)


async def test_decisions_arriving_during_a_write_form_the_next_batch():
    ledger = _Ledger()
    batcher = DecideBatcher(ledger.decide_many, max_batch=3)
    first = asyncio.create_task(batcher.decide(_draft(0)))
    await _until(ledger.writing)  # the lone first delivery is written at once, alone
    rest = [asyncio.create_task(batcher.decide(_draft(n))) for n in range(1, 6)]
    await asyncio.sleep(0)
    ledger.release.set()
    answers = await asyncio.gather(first, *rest)
    assert [a.receipt_id for a in answers] == [f"r{n}" for n in range(6)]
    assert ledger.batches == [["0"], ["1", "2", "3"], ["4", "5"]]  # at most max_batch per transaction


async def test_each_requester_gets_its_own_error_and_a_cancelled_one_still_has_its_draft_written():
    ledger = _Ledger()
    batcher = DecideBatcher(ledger.decide_many)
    first = asyncio.create_task(batcher.decide(_draft(0)))
    await _until(ledger.writing)
    bad = asyncio.create_task(batcher.decide(_draft(1).with_outcome(Outcome.REJECT, Reason.DUPLICATE_WORK, "bad")))
    gone = asyncio.create_task(batcher.decide(_draft(2)))
    good = asyncio.create_task(batcher.decide(_draft(3)))
    await asyncio.sleep(0)
    gone.cancel()  # the client went away: its receipt is still written with its batch
    ledger.release.set()
    assert (await first).receipt_id == "r0" and (await good).receipt_id == "r3"
    with pytest.raises(ValueError, match="bad"):
        await bad
    with pytest.raises(asyncio.CancelledError):
        await gone
    assert ledger.batches == [["0"], ["bad", "2", "3"]]


async def test_the_activity_attempt_of_the_requester_goes_with_its_draft():
    ledger = _Ledger()
    ledger.release.set()
    batcher = DecideBatcher(ledger.decide_many)
    token = ACTIVITY_ATTEMPT.set(4)
    try:
        await batcher.decide(_draft(0))
    finally:
        ACTIVITY_ATTEMPT.reset(token)
    await batcher.decide(_draft(1))
    assert ledger.attempts == [4, None]


async def test_a_draft_from_another_event_loop_is_decided_on_its_own():
    """A batch being written from one event loop never takes a draft of another loop (its future could
    not be completed from there): that draft is decided alone, in a thread of its own loop."""
    ledger = _Ledger()
    batcher = DecideBatcher(ledger.decide_many)
    other: dict[str, IntakeDecision] = {}
    thread = threading.Thread(target=lambda: other.setdefault("answer", asyncio.run(batcher.decide(_draft(0)))))
    thread.start()
    await _until(ledger.writing)  # the other loop's writer is inside its batch
    mine = asyncio.create_task(batcher.decide(_draft(1)))
    await asyncio.sleep(0.01)
    ledger.release.set()
    assert (await mine).receipt_id == "r1"
    await asyncio.to_thread(thread.join, 5)
    assert other["answer"].receipt_id == "r0"
    assert sorted(ledger.batches) == [["0"], ["1"]]


async def test_a_writer_cancelled_before_it_ran_does_not_strand_later_decisions():
    """Event-loop shutdown cancels every task, a writer that never started included: its ``finally``
    never runs, so it stays set though done. Later decisions must start a new writer, not queue forever."""
    ledger = _Ledger()
    ledger.release.set()
    batcher = DecideBatcher(ledger.decide_many)
    stranded = asyncio.create_task(batcher.decide(_draft(0)))
    await asyncio.sleep(0)  # the requester queued its draft and created the writer, which has not run
    assert batcher._writer is not None
    batcher._writer.cancel()
    await asyncio.sleep(0)
    answer = await asyncio.wait_for(batcher.decide(_draft(1)), 10)
    assert answer.receipt_id == "r1"
    assert ["1"] in [batch[-1:] for batch in ledger.batches]
    stranded.cancel()
