"""The versions this process is starting now: from its accept's commit to the mark of its run.

Intake commits an accept (version ``accepted``) and only then starts the run and marks it
(``admitted``, with the workflow id). A start that fails, or a ledger that goes away between the
commit and the mark (a PostgreSQL restart: the kill check or the mark cannot be written), leaves
the version ``accepted`` with no run, and its delivery answered 5xx. The outbox relay starts such
a version after its grace period (``intake/outbox.py``, every minute by default), but the sender
usually comes first: it repeats the delivery that was answered 5xx. That repeat — or any other
delivery of the version — finds the version accepted and never started (``Repeat.unstarted``),
and :class:`~intake.service.IntakeService` starts it then, through the same start as an accept.

This registry tells such a repeat apart from a duplicate that merely arrived while this process
is still starting the version (between the commit and the mark, a few milliseconds in a storm):
that one must not start it a second time. Another process's start in progress is not seen here;
starting it twice is harmless (signal-with-start by work key; the run ignores a generation it
already holds, and the mark only moves ``accepted`` to ``admitted``), and costs one signal.

In memory, per process, and bounded by the admissions in progress: a key lives from just before
its accept's commit until its mark is written or its start has failed (a ``with`` block).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["StartsInProgress"]


class StartsInProgress:
    """``with starts.hold(work_key, version):`` around a start (or :meth:`enter` / :meth:`leave` when the
    start runs in a task of its own); :meth:`held` asks whether one is in progress."""

    def __init__(self) -> None:
        self._held: Counter[tuple[str, str]] = Counter()

    def __len__(self) -> int:
        return len(self._held)

    def held(self, work_key: str, version: str) -> bool:
        return (work_key, version) in self._held

    def enter(self, work_key: str, version: str) -> None:
        self._held[(work_key, version)] += 1

    def leave(self, work_key: str, version: str) -> None:
        key = (work_key, version)
        self._held[key] -= 1
        if self._held[key] <= 0:
            del self._held[key]

    @contextmanager
    def hold(self, work_key: str | None, version: str | None) -> Iterator[None]:
        """Register the start of (work key, version) for the block; nested holds of one key count."""
        if work_key is None or version is None:
            yield
            return
        self.enter(work_key, version)
        try:
            yield
        finally:
            self.leave(work_key, version)
