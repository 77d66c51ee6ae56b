"""The lock that orders concurrent accepts of one work key whose versions order (triage).

``SqlIntakeStore`` refuses an accept older than a version of its work key already taken
(``stale-version``, ``intake.admission_rules:newer_version_refusal``), read in the accept's
transaction. On PostgreSQL (READ COMMITTED) that read cannot see a newer version accepted by a
transaction not yet committed, so two concurrent accepts of two versions both got in, the older
one possibly last. Each such accept now takes this lock first, so the second one's read runs after
the first has committed and sees its version.

Why an advisory lock on the work key rather than the work item row: the row does not exist until a
first version is admitted (two first deliveries of a new issue race too), and locking the row before
the accept's other rows would invert the established order (the dispatcher locks its deferred item
before the work item; ``apply_capacity`` locks the waiting deferred item before it too). The lock is
taken before everything else in the transaction, so the order is:

    version-order lock (this) → deferred item being resumed → kill lock (shared) → delivery claim
    → work version → waiting deferred item → capacity counters → work item → version insert

and ``mark_admitted`` / ``record_outcome`` (version → receipt → work item) never take it. It is held
to commit (transaction-scoped). The two-key form of ``pg_advisory_xact_lock`` keeps it apart from the
single-key kill lock (PostgreSQL: the two key spaces do not overlap); a ``hashtext`` collision of two
work keys only serialises their accepts. SQLite: nothing to take, ``BEGIN IMMEDIATE`` already runs one
writer (one accept) at a time.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlmodel import Session

_CLASS = 0x5347_0001
"""The first key of the two-key advisory lock: Sluicegate's version order (the second is the work key's hash)."""
_LOCK = text("SELECT pg_advisory_xact_lock(:cls, hashtext(:wk))")


def lock_version_order(s: Session, work_key: str) -> None:
    """Wait for any other accept of ``work_key`` holding the lock to end (PostgreSQL; SQLite: no-op)."""
    if s.get_bind().dialect.name == "postgresql":
        s.execute(_LOCK, {"cls": _CLASS, "wk": work_key})
