"""Group commit for the decisions of a duplicate storm: one thread hop and one ledger transaction per batch.

Most deliveries of a storm are decided before any forge read and write only their delivery claim and
receipt (``duplicate-work``, ``out-of-scope``, ``too-old``...: the ledger's *plain* decisions,
``ledger/_plain_decide.py``). Each used to take its own worker thread and its own transaction; under
SQLite every transaction serializes on ``BEGIN IMMEDIATE`` anyway, so 32 concurrent duplicates
queued for the write lock one by one, each paying the thread hop, the commit and its WAL append.

:class:`DecideBatcher` gathers the drafts that arrive while a batch is being written and writes them
as the next batch (``IntakeStore.decide_many``, in a worker thread), at most ``max_batch`` at a time.
Nothing waits for a batch to fill: an idle gate writes a lone delivery at once, exactly as before,
and batches form only when deliveries arrive faster than one transaction commits.

*Nothing verified is lost*: a requester is answered only after the transaction holding its receipt
committed (or with the exception its own decision raised, its 503); a requester that goes away
meanwhile does not take its receipt with it. Answers are exactly :meth:`IntakeStore.decide`'s (the
store decides a failed batch again one draft at a time).

One instance per ``IntakeService``; batches are per event loop (a draft arriving from another loop
while a batch is written is decided on its own).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace

from intake.decision import IntakeDecision
from intake.shielded_answer import shielded_answer
from intake.receipts import ACTIVITY_ATTEMPT, ReceiptDraft

DEFAULT_MAX_BATCH = 64

DecideMany = Callable[[list[ReceiptDraft]], list[IntakeDecision | Exception]]


class DecideBatcher:
    """Decide drafts (no capacity context) in batches, one batch in flight at a time."""

    def __init__(self, decide_many: DecideMany, max_batch: int = DEFAULT_MAX_BATCH) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self._decide_many = decide_many
        self._max_batch = max_batch
        self._waiting: list[tuple[ReceiptDraft, asyncio.Future[IntakeDecision]]] = []
        self._writer: asyncio.Task[None] | None = None

    async def decide(self, draft: ReceiptDraft) -> IntakeDecision:
        """``draft`` decided and committed (possibly with others in one transaction)."""
        if draft.activity_attempt is None and (attempt := ACTIVITY_ATTEMPT.get()) is not None:
            draft = replace(draft, activity_attempt=attempt)  # the writer task runs outside this context
        loop = asyncio.get_running_loop()
        if self._writer is not None and self._writer.get_loop() is not loop:
            # a batch is being written from another event loop (a test's second loop, say): never mix
            [answer] = await asyncio.to_thread(self._decide_many, [draft])
            if isinstance(answer, Exception):
                raise answer
            return answer
        future: asyncio.Future[IntakeDecision] = loop.create_future()
        self._waiting.append((draft, future))
        if self._writer is None or self._writer.done():  # done: cancelled before it ran (no finally)
            self._writer = loop.create_task(self._write())
        # shield: a requester cancelled meanwhile must not cancel the batch its receipt is in
        return await shielded_answer(future)  # a cancelled request does not cancel the others' write

    async def _write(self) -> None:
        batch: list[tuple[ReceiptDraft, asyncio.Future[IntakeDecision]]] = []
        try:
            while self._waiting:
                batch, self._waiting = self._waiting[:self._max_batch], self._waiting[self._max_batch:]
                try:
                    answers = await asyncio.to_thread(self._decide_many, [draft for draft, _ in batch])
                except Exception as exc:  # noqa: BLE001 - every requester of the batch hears it
                    answers = [exc] * len(batch)
                for (_, future), answer in zip(batch, answers, strict=True):
                    if future.done():
                        continue
                    if isinstance(answer, Exception):
                        future.set_exception(answer)
                    else:
                        future.set_result(answer)
                batch = []
        finally:
            self._writer = None
            for _, future in batch + self._waiting:  # only when the writer itself was cancelled (shutdown)
                if not future.done():
                    future.cancel()
            self._waiting = []
