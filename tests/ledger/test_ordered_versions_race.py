"""Two concurrent accepts of different versions of one triage issue: at most one wins the ordering.

Triage versions order (``TaskSpec.ordered_versions``): an accept older than a version of its work
key already accepted, admitted or done is refused ``stale-version``, read in the accept's
transaction. On PostgreSQL that read could not see a newer version accepted by a transaction not yet
committed, so both were admitted — the older one *after* the newer, its run superseding the newer
one (closing note of session 8). The accept now takes the work key's version-order lock first
(``ledger/_version_order_lock.py``); on SQLite ``BEGIN IMMEDIATE`` already runs one accept at a
time, which the SQLite case proves with the same interleaving.

The newer accept is held just before it inserts its version row (it has decided, bumped the work
item and holds its locks) while the older accept starts; the older is let go only once it is
blocked behind the newer (PostgreSQL: waits on a lock; SQLite: has begun its write transaction).
"""

from __future__ import annotations

import threading
import uuid
from datetime import UTC, datetime

import pytest
from sqlmodel import Session

from intake.decision import IntakeDecision, Outcome, Reason
from intake.envelope import TriggerKind
from intake.receipts import ReceiptDraft
from ledger import SqlIntakeStore, WorkItem, WorkVersion
from tests.support.pause_at_statement import PauseAtStatement, in_threads, until_blocked_or_done

OLDER, NEWER = "2026-12-01T10:00:00Z", "2026-12-01T10:05:00Z"


def _accept(key: str, version: str) -> ReceiptDraft:
    return ReceiptDraft(outcome=Outcome.ACCEPT, reason=Reason.ADMITTED, message="admitting",
                        trigger_kind=TriggerKind.EVENT, source="github", received_at=datetime.now(UTC),
                        delivery_id=uuid.uuid4().hex, work_key=key, target_id="acme/api#5", input_version=version,
                        tenant="acme", ordered_versions=True)


@pytest.mark.parametrize("first_versions", [False, True], ids=["new-issue", "issue-seen-before"])
def test_an_older_accept_racing_a_newer_one_is_refused_stale_version(engine, first_versions):
    key = f"acme/github:acme/api#{uuid.uuid4().int % 10**8}:triage"
    store = SqlIntakeStore(engine)
    if first_versions:  # the work item row exists already (an earlier version was taken)
        assert store.decide(_accept(key, "2026-12-01T09:00:00Z")).outcome == Outcome.ACCEPT
    newer_thread: list[int] = []
    older_thread: list[int] = []
    decided: dict[str, IntakeDecision | BaseException] = {}

    def decide(name: str, version: str, idents: list[int]) -> None:
        idents.append(threading.get_ident())
        try:
            decided[name] = store.decide(_accept(key, version))
        except BaseException as exc:  # noqa: BLE001 - asserted below
            decided[name] = exc

    with PauseAtStatement(engine, lambda sql: sql.lstrip().startswith("INSERT INTO work_versions"),
                          in_thread=in_threads(newer_thread)) as newer_held, \
            PauseAtStatement(engine, lambda sql: sql.lstrip().startswith("BEGIN"), in_thread=in_threads(older_thread),
                             hold=False) as older_began:
        newer = threading.Thread(target=decide, args=("newer", NEWER, newer_thread))
        newer.start()
        newer_held.wait_reached("the newer accept never reached its version insert")
        older = threading.Thread(target=decide, args=("older", OLDER, older_thread))
        older.start()
        if engine.dialect.name == "postgresql":
            until_blocked_or_done(engine, older)  # old code: blocked on the work item, its check already made
        else:
            older_began.wait_reached("the older accept never began its transaction")  # behind the write lock
        newer_held.release()
        newer.join(20)
        older.join(20)
    assert not newer.is_alive() and not older.is_alive()
    assert not any(isinstance(d, BaseException) for d in decided.values()), decided
    assert decided["newer"].outcome == Outcome.ACCEPT  # type: ignore[union-attr]
    older_decision = decided["older"]
    assert (older_decision.outcome, older_decision.reason) == (Outcome.REJECT, Reason.STALE_VERSION), older_decision  # type: ignore[union-attr]
    with Session(engine) as s:
        assert s.get(WorkItem, key).current_version == NEWER
        assert s.get(WorkVersion, (key, OLDER)) is None
