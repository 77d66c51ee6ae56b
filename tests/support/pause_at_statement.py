"""Deterministic race control for ledger tests: hold one thread at a chosen SQL statement.

A race between two transactions is reproduced by stopping one of them at a statement (before it
runs, or just after) until the other has done its part, instead of hoping a sleep lines them up.
The statement is recognised by its text and the thread by a predicate (the thread a test started,
or any thread but the test's own), so the other side's statements run freely.

On PostgreSQL, "the other side is now waiting on a row or advisory lock" is read from
``pg_stat_activity`` (:func:`waiting_on_a_lock`): a test releases the held thread only once the
other is blocked behind it (or has finished), which is the interleaving under test.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from sqlalchemy import event, text
from sqlalchemy.engine import Engine

_SETTLE_SECONDS = 10
"""How long a wait for the other side may take before the test fails with its message (not a timing
assertion: in practice the wait ends in milliseconds, the bound only keeps a broken test from hanging)."""


class PauseAtStatement:
    """Holds the first statement that ``matches`` in a thread ``in_thread`` accepts until :meth:`release`.

    ``after``: hold once the statement has run (its locks taken), not before it. ``hold=False``: only
    note that the statement was reached (:attr:`reached`), without holding. Use as a context manager:
    the listener is removed and a held thread let go on exit, whatever the test's outcome."""

    def __init__(self, engine: Engine, matches: Callable[[str], bool], *, in_thread: Callable[[], bool] = lambda: True,
                 after: bool = False, hold: bool = True) -> None:
        self._engine = engine
        self._matches = matches
        self._in_thread = in_thread
        self._hook = "after_cursor_execute" if after else "before_cursor_execute"
        self._hold = hold
        self.reached = threading.Event()
        self._go = threading.Event()

    def _on_statement(self, conn, cursor, statement, params, context, executemany) -> None:
        if self.reached.is_set() or not self._in_thread() or not self._matches(statement):
            return
        self.reached.set()
        if self._hold:
            self._go.wait(_SETTLE_SECONDS * 3)

    def wait_reached(self, failure: str) -> None:
        assert self.reached.wait(_SETTLE_SECONDS), failure

    def release(self) -> None:
        self._go.set()

    def __enter__(self) -> PauseAtStatement:
        event.listen(self._engine, self._hook, self._on_statement)
        return self

    def __exit__(self, *exc: object) -> None:
        self._go.set()
        event.remove(self._engine, self._hook, self._on_statement)


def in_threads(idents: list[int]) -> Callable[[], bool]:
    """A thread predicate for threads that record ``threading.get_ident()`` in ``idents`` as they start."""
    return lambda: threading.get_ident() in idents


def not_in_this_thread() -> Callable[[], bool]:
    """A thread predicate for every thread but the caller's (say, the worker thread of ``asyncio.to_thread``)."""
    mine = threading.get_ident()
    return lambda: threading.get_ident() != mine


def waiting_on_a_lock(engine: Engine) -> int:
    """PostgreSQL: how many sessions of this database wait on a lock (row, transaction or advisory)."""
    with engine.connect() as conn:
        return conn.execute(text("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                                 "AND wait_event_type = 'Lock'")).scalar_one()


def until_blocked_or_done(engine: Engine, thread: threading.Thread) -> bool:
    """PostgreSQL: wait until some session waits on a lock or ``thread`` has ended; True if blocked."""
    deadline = time.monotonic() + _SETTLE_SECONDS
    while thread.is_alive() and waiting_on_a_lock(engine) == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    return waiting_on_a_lock(engine) > 0


def started_and_blocked(engine: Engine, target: Callable[[], None], failure: str) -> threading.Thread:
    """PostgreSQL: ``target`` started in a thread, once its transaction waits on a lock (one waiter)."""
    thread = threading.Thread(target=target)
    thread.start()
    until_blocked_or_done(engine, thread)
    assert waiting_on_a_lock(engine) == 1, failure
    return thread
