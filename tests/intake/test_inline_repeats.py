"""The early repeat check on the event loop never waits for the database: SQLite answers inline only
when it can at once (its own connection, a 20 ms busy timeout); behind a writer that holds the
database it falls back to a worker thread and the event loop keeps running. PostgreSQL always reads
in a thread. Real SQLite files and a real PostgreSQL; the lock is a second sqlite3 connection's."""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
import uuid
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import ledger
from intake.decision import Outcome, Reason
from intake.envelope import Envelope, PullRequestRef, TriggerKind
from intake.identity import review_candidate
from intake.receipts import draft_for
from intake.repeats import look_up
from ledger import SqlIntakeStore

VERSION = hashlib.sha1(b"inline repeats").hexdigest()


def _taken(store: SqlIntakeStore):
    """A version accepted in the ledger, and the probe of a new delivery for the same version."""
    now = datetime.now(UTC)
    ref = PullRequestRef(f"o{uuid.uuid4().hex[:8]}", "api", 1)
    env = Envelope(id=str(uuid.uuid4()), source="github", type="pull_request.synchronize", subject=ref.target_id,
                   time=now, received_at=now, trigger_kind=TriggerKind.EVENT, tenant="acme")
    draft = draft_for(env, review_candidate("acme", ref, VERSION), Outcome.ACCEPT, Reason.ADMITTED, "seed",
                      input_version=VERSION)
    assert store.decide(draft).outcome == Outcome.ACCEPT
    return replace(draft, delivery_id=str(uuid.uuid4()), body_digest=None)


async def test_the_inline_answer_is_the_threaded_one(ledger_url: str) -> None:
    engine = ledger.make_engine(ledger_url)
    store = SqlIntakeStore(engine)
    probe = _taken(store)
    inline = store.find_repeat_inline(probe)
    if engine.dialect.name == "sqlite":
        assert inline == store.find_repeat(probe) and inline.blocking  # answered on the calling thread
    else:
        assert inline is None  # PostgreSQL: a network round trip, always in a thread
    repeat = await look_up(store, probe)
    assert repeat == store.find_repeat(probe) and "already accepted" in repeat.blocking
    engine.dispose()


async def test_a_locked_sqlite_ledger_sends_the_check_to_a_thread_and_the_loop_keeps_running(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    ledger.upgrade(f"sqlite:///{path}")
    engine = ledger.make_engine(f"sqlite:///{path}")
    store = SqlIntakeStore(engine)
    probe = _taken(store)
    # A writer holding the whole database: in WAL mode only an exclusive locking mode keeps readers out,
    # and it needs every other connection closed first (each holds a shared lock while open).
    engine.dispose()
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA locking_mode=EXCLUSIVE")
    writer.execute("BEGIN EXCLUSIVE")
    writer.execute("CREATE TABLE lock_holder (x INTEGER)")
    other_ran = asyncio.Event()

    async def other() -> None:
        other_ran.set()

    lookup = asyncio.create_task(look_up(store, probe))  # scheduled first: an inline wait would block `other`
    other_task = asyncio.create_task(other())
    await other_ran.wait()
    await other_task
    assert not lookup.done()  # the check is waiting for the lock in a worker thread, not on the loop
    writer.close()  # releases the lock (and rolls the table back)
    repeat = await lookup
    assert repeat == store.find_repeat(probe) and repeat.blocking
    engine.dispose()
