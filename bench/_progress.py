"""The running bench's spinner, and periodic work for the length of a block.

While a bench runs on a terminal, one spinner (``sluicegate.observability.progress``) shows the
measurement in progress and the time elapsed; each bench names its stages with :func:`stage`. With
``--json``, or when stdout is not a terminal, there is no spinner and :func:`stage` does nothing.

:func:`every` runs a periodic coroutine (a scheduled dispatch pass) for the length of a block.
Both are part of the harness's API (``bench._harness`` exports them).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from typing import AsyncIterator, Awaitable, Callable

from sluicegate.observability.progress import SILENT, Status, spinner


@contextlib.asynccontextmanager
async def every(seconds: float, work: Callable[[], Awaitable[object]]) -> AsyncIterator[None]:
    """Await ``work()`` at once and then every ``seconds`` while the block runs; on leaving it, the
    call in progress finishes and no other starts (a scheduled dispatch pass, as the dispatcher's
    ``dispatch_interval_seconds`` timer runs it)."""
    stop = asyncio.Event()

    async def loop() -> None:
        while not stop.is_set():
            await work()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), seconds)

    task = asyncio.create_task(loop())
    try:
        yield
    finally:
        stop.set()
        await task


_status: Status = SILENT
"""The running bench's spinner (set by :func:`finish`), or one that shows nothing."""

SPINNER_TICK = 1.0
"""Seconds between redraws of the elapsed time, so a measurement that prints nothing shows it is alive."""


def stage(text: str) -> None:
    """Name what the bench is measuring now (``capacity burst: draining``) on its spinner; a no-op
    with ``--json``, when stdout is not a terminal, or outside :func:`finish`."""
    _status.update(text)


@contextlib.contextmanager
def spinning(a: argparse.Namespace, bench: str):
    """The bench's spinner while ``run`` runs: never with ``--json`` (stdout then carries only the
    document, and stderr the human report), and only on a terminal (``progress.spinner`` checks)."""
    global _status
    if a.json:
        yield
        return
    with spinner(f"{bench}: starting", tick=SPINNER_TICK) as status:
        _status = status
        try:
            yield
        finally:
            _status = SILENT
