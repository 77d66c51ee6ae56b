"""The lock that orders a group commit's body-digest claims (PostgreSQL).

A delivery claim takes two unique keys, its delivery id and its ``(source, body digest)``
(``ledger/_plain_decide.py``). A batch of claims takes them in (source, delivery id) order, which
orders the ids but not the digests: two replicas' batches holding replays of the same two signed
bodies under other delivery ids (A: 1a=D1 … 1z=D2, B: 2a=D2 … 2z=D1) each held one digest while
waiting for the other's (a deadlock; PostgreSQL aborted one batch after ``deadlock_timeout``).

A batch of more than one claim therefore first takes a transaction-scoped advisory lock per digest,
in one global order (the lock keys sorted), before any claim. Two batches sharing a digest then take
it one after the other before either holds a claim; batches sharing none can only wait on each other
for ids, which the id order keeps acyclic. A lone claim takes no lock: a speculative insert waiting on
a conflict holds no tuple of its own, so it can never be part of a cycle. A collision of two digests'
keys only serialises their batches. The two-key form keeps these keys apart from the kill lock's single
key; the first key, :data:`_CLASS`, from the version-order lock's. SQLite: nothing to take (``BEGIN
IMMEDIATE`` runs one writer at a time).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from sqlalchemy import text
from sqlalchemy.engine import Connection

_CLASS = 0x5347_0002
"""The first key of the two-key advisory lock: body-digest claims (``0x5347_0001`` is the version order)."""
_LOCK = text("SELECT count(pg_advisory_xact_lock(:cls, k)) FROM unnest(CAST(:keys AS integer[])) AS k")
"""One statement for every key; ``unnest`` yields the array's elements in order, so they are locked in it."""


def _key(source: str, digest: str) -> int:
    """A signed 32-bit lock key for ``(source, digest)`` (the same in every process)."""
    return int.from_bytes(hashlib.blake2b(f"{source}\0{digest}".encode(), digest_size=4).digest(), "big",
                          signed=True)


def lock_digests(conn: Connection, claims: Iterable[tuple[str | None, str | None]]) -> None:
    """Before a batch's claims (``(source, body digest)`` each): lock their digests in key order."""
    if conn.dialect.name != "postgresql":
        return
    keys = sorted({_key(source or "", digest) for source, digest in claims if digest})
    if keys:
        conn.execute(_LOCK, {"cls": _CLASS, "keys": keys})
