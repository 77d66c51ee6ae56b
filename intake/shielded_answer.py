"""Await a group commit's answer without cancelling the commit, and without leaking its error.

``asyncio.shield`` keeps a cancelled requester (a client gone) from cancelling the batch its row is
in, but once the requester is gone nothing retrieves the answer: an error set on it later (its
decision failed, the ledger unreachable) was logged by asyncio as "Future exception was never
retrieved", an ERROR line with a traceback per such request.
"""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

T = TypeVar("T")


def _retrieved(answer: asyncio.Future[Any]) -> None:
    if not answer.cancelled():
        answer.exception()  # marks the error retrieved: the requester that would have raised it is gone


async def shielded_answer(answer: asyncio.Future[T]) -> T:
    """``await answer``; a cancelled caller leaves ``answer`` (and the write behind it) running."""
    try:
        return await asyncio.shield(answer)
    except asyncio.CancelledError:
        answer.add_done_callback(_retrieved)
        raise
