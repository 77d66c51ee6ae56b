"""A requester that goes away (client disconnect: its task cancelled) while its batch is written, and
whose own answer is then an error: the error is retrieved, never logged by asyncio as "Future
exception was never retrieved" (an ERROR line with a traceback per such request). Both group commits:
``intake/decide_batch.py`` and ``intake/admitted_marks.py``."""

from __future__ import annotations

import asyncio
import gc
import threading
from datetime import UTC, datetime
from typing import Any, Sequence

from intake.admitted_marks import AdmittedMarks
from intake.decide_batch import DecideBatcher
from intake.decision import IntakeDecision, Outcome, Reason
from intake.envelope import TriggerKind
from intake.receipts import ReceiptDraft


def _draft(n: int) -> ReceiptDraft:
    return ReceiptDraft(outcome=Outcome.REJECT, reason=Reason.DUPLICATE_WORK, message=str(n),
                        trigger_kind=TriggerKind.EVENT, source="github", received_at=datetime.now(UTC),
                        delivery_id=f"d{n}", work_key="k", input_version="v")


async def _unretrieved(scenario) -> list[dict[str, Any]]:
    """The contexts asyncio's exception handler got while ``scenario`` ran and its futures were freed."""
    loop = asyncio.get_running_loop()
    seen: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: seen.append(context))
    try:
        await scenario()
        for _ in range(3):
            await asyncio.sleep(0)
        gc.collect()
    finally:
        loop.set_exception_handler(previous)
    return [c for c in seen if "never retrieved" in str(c.get("message"))]


async def _until(event: threading.Event) -> None:
    while not event.is_set():
        await asyncio.sleep(0.001)


async def test_decide_batch_a_gone_requesters_error_is_retrieved():
    writing, release = threading.Event(), threading.Event()

    def decide_many(drafts: list[ReceiptDraft]) -> list[IntakeDecision | Exception]:
        writing.set()
        release.wait(30)
        return [RuntimeError(f"ledger unreachable for {d.message}") for d in drafts]

    async def scenario() -> None:
        batcher = DecideBatcher(decide_many)
        gone = asyncio.create_task(batcher.decide(_draft(0)))
        await _until(writing)
        gone.cancel()
        await asyncio.gather(gone, return_exceptions=True)
        release.set()
        last = asyncio.create_task(batcher.decide(_draft(1)))  # after the gone one's batch was answered
        await asyncio.gather(last, return_exceptions=True)

    assert await _unretrieved(scenario) == []


async def test_admitted_marks_a_gone_requesters_error_is_retrieved():
    writing, release = threading.Event(), threading.Event()

    def write_many(marks: Sequence[tuple[IntakeDecision, str, str | None]]) -> list[IntakeDecision]:
        writing.set()
        release.wait(30)
        raise RuntimeError("the ledger is unreachable")

    async def scenario() -> None:
        marks = AdmittedMarks(write_many)
        decision = IntakeDecision(Outcome.ACCEPT, str(Reason.ADMITTED), "admitting", receipt_id="r0")
        gone = asyncio.create_task(marks.mark(decision, "agent/0", None))
        await _until(writing)
        gone.cancel()
        await asyncio.gather(gone, return_exceptions=True)
        release.set()
        last = asyncio.create_task(marks.mark(decision, "agent/1", None))
        await asyncio.gather(last, return_exceptions=True)

    assert await _unretrieved(scenario) == []
