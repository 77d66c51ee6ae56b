"""Group commit for ``mark_admitted``: concurrent marks written in one ledger transaction.

Each admission ends with a write that records its started run (``IntakeStore.mark_admitted``). One
transaction per admission queued every admission behind the ledger's writer a second time (SQLite
has one writer; every transaction also costs a thread hop, a ``BEGIN``, a commit). Here the marks
that arrive while a write is in flight are queued and the next write takes them all, in one
transaction (``IntakeStore.mark_admitted_many``), and one thread hop. Each requester still waits for
the commit that holds its mark, so what an answer says is as durable as before: nothing changes for
a crash (a mark never committed is an ``accepted`` version, which the outbox relay starts again,
``intake/outbox.py``) or for a second API replica (each replica batches only its own marks; the
store locks rows in one global order).

A batch that fails is written again one mark per transaction, so one mark's failure (a deadlock
victim, a lock timeout) is that requester's alone, as it was before batching.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Sequence

from intake.decision import IntakeDecision
from intake.shielded_answer import shielded_answer

log = logging.getLogger("sluicegate.intake")

Mark = tuple[IntakeDecision, str, str | None]
"""(the accepted decision, the workflow id, the run id or None)."""
WriteMany = Callable[[Sequence[Mark]], list[IntakeDecision]]
"""Writes the marks in one transaction (synchronous; run in a thread) and returns them marked, in order."""


@dataclass
class _Queue:
    """One event loop's waiting marks and its flusher."""

    waiting: list[tuple[Mark, asyncio.Future[IntakeDecision]]] = field(default_factory=list)
    flusher: asyncio.Task[None] | None = None


class AdmittedMarks:
    """``await marks.mark(decision, workflow_id, run_id)``: the decision marked, once its mark committed."""

    def __init__(self, write_many: WriteMany, max_batch: int = 256) -> None:
        self._write_many = write_many
        self._max_batch = max_batch
        self._queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Queue] = weakref.WeakKeyDictionary()
        self.batches: deque[int] = deque(maxlen=100)
        """The size of each transaction written, most recent last (bounded; for tests and telemetry)."""

    async def mark(self, decision: IntakeDecision, workflow_id: str, run_id: str | None) -> IntakeDecision:
        loop = asyncio.get_running_loop()
        queue = self._queues.setdefault(loop, _Queue())
        done: asyncio.Future[IntakeDecision] = loop.create_future()
        queue.waiting.append(((decision, workflow_id, run_id), done))
        if queue.flusher is None or queue.flusher.done():
            queue.flusher = loop.create_task(self._flush(queue))
        return await shielded_answer(done)  # a cancelled request does not cancel the others' write

    async def _flush(self, queue: _Queue) -> None:
        batch: list[tuple[Mark, asyncio.Future[IntakeDecision]]] = []
        try:
            while queue.waiting:
                batch, queue.waiting = queue.waiting[:self._max_batch], queue.waiting[self._max_batch:]
                await self._write(batch)
                batch = []
        finally:
            # Only when the flusher itself ended early (cancelled: the event loop shutting down): the
            # batch in flight (its transaction may still commit, in its thread) and the marks queued
            # behind it are answered a cancellation, never left awaiting a future nobody completes.
            left, queue.waiting = batch + queue.waiting, []
            for _, done in left:
                if not done.done():
                    done.cancel()

    async def _write(self, batch: list[tuple[Mark, asyncio.Future[IntakeDecision]]]) -> None:
        marks = [mark for mark, _ in batch]
        self.batches.append(len(marks))
        try:
            written = await asyncio.to_thread(self._write_many, marks)
        except Exception as exc:  # noqa: BLE001 - answered below, per requester
            if len(batch) == 1:
                _settle(batch[0][1], error=exc)
                return
            log.warning("a batch of %d admitted marks failed (%r); writing them one by one", len(batch), exc)
            for mark, done in batch:
                try:
                    _settle(done, (await asyncio.to_thread(self._write_many, [mark]))[0])
                except Exception as one:  # noqa: BLE001 - this requester's own failure
                    _settle(done, error=one)
            return
        for (_, done), marked in zip(batch, written, strict=True):
            _settle(done, marked)


def _settle(done: asyncio.Future[IntakeDecision], value: IntakeDecision | None = None,
            error: BaseException | None = None) -> None:
    if done.done():
        return
    if error is not None:
        done.set_exception(error)
    else:
        assert value is not None
        done.set_result(value)
