"""``intake/admitted_marks.py`` when its flusher is cancelled with a batch in flight (an event loop
shutting down, uvicorn's): every requester of that batch and every mark still queued is answered (a
cancellation), none is left awaiting a future nobody will ever complete. Both ledgers."""

from __future__ import annotations

import asyncio
import threading
import uuid
from datetime import UTC, datetime
from typing import Sequence

from intake.admitted_marks import AdmittedMarks
from intake.decision import IntakeDecision, Outcome, Reason
from intake.envelope import TriggerKind
from intake.receipts import ReceiptDraft
from ledger import SqlIntakeStore


def _accepted(store: SqlIntakeStore) -> IntakeDecision:
    return store.decide(ReceiptDraft(
        outcome=Outcome.ACCEPT, reason=Reason.ADMITTED, message="admitting", trigger_kind=TriggerKind.EVENT,
        source="github", received_at=datetime.now(UTC), delivery_id=uuid.uuid4().hex,
        work_key=f"acme/github:acme/api-{uuid.uuid4().hex[:8]}#1:review", target_id="acme/api#1",
        input_version=uuid.uuid4().hex, tenant="acme"))


async def test_a_cancelled_flusher_leaves_no_requester_waiting_forever(engine):
    store = SqlIntakeStore(engine)
    writing, release = threading.Event(), threading.Event()

    def held(marks: Sequence[tuple[IntakeDecision, str, str | None]]) -> list[IntakeDecision]:
        writing.set()
        release.wait(30)  # the real store's write, held while the flusher is cancelled
        return store.mark_admitted_many(marks)

    marks = AdmittedMarks(held)
    decisions = [_accepted(store) for _ in range(3)]
    first = asyncio.create_task(marks.mark(decisions[0], "agent/0", "run-0"))
    while not writing.is_set():
        await asyncio.sleep(0.001)
    queued = [asyncio.create_task(marks.mark(d, f"agent/{n}", None)) for n, d in enumerate(decisions[1:], 1)]
    await asyncio.sleep(0)
    [flusher] = [t for t in asyncio.all_tasks() if t not in (first, *queued, asyncio.current_task())]
    flusher.cancel()  # the loop shuts down: the flusher is cancelled mid-write
    await asyncio.gather(flusher, return_exceptions=True)
    for _ in range(5):
        await asyncio.sleep(0)
    try:
        assert first.done() and all(q.done() for q in queued), "a requester awaits its mark forever"
        assert all(t.cancelled() for t in (first, *queued))
    finally:
        release.set()
        for task in (first, *queued):
            task.cancel()
        await asyncio.gather(first, *queued, return_exceptions=True)
    # a later mark on the same loop gets a flusher of its own
    release.set()
    assert (await marks.mark(decisions[1], "agent/again", None)).workflow_id == "agent/again"
