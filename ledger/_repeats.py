"""The early repeat check: one read-only statement, run right after the signature, before any forge read.

It answers two questions at once, from the ledger alone:

* is this delivery already decided — its id (``duplicate-delivery``) or its signed body under
  another id (``replayed-body``)? Then the original's receipt answers, with the workflow it
  admitted and whether a waiting deferred item still holds it; nothing is written.
* is this (work key, input version) already admitted, running (``accepted``/``admitted``), queued
  (a waiting deferred item not blocked on an unreadable source) or ``done``? Then the delivery is
  ``duplicate-work`` without reading the forge: a rejection needs no freshness (the version can
  never become *more* admissible by being re-read). The caller still records it through
  ``IntakeStore.decide`` (delivery claim + receipt), so every trigger keeps a queryable receipt.

Why ``text()`` and no ORM here: this is the hot path of a duplicate storm. One round trip of a
``UNION ALL`` of four index lookups (deliveries by primary key and by the per-source digest,
work_versions by primary key, deferred_items by ``(tenant, work_key)`` waiting) costs a fraction
of a Session, identity map and four ORM queries; the bench (``bench/_dup.py``) measures it
against a bare insert. The rows are read under the connection's default isolation, without
locks and outside an explicit transaction (``ledger._engine.single_read``: on SQLite no
``BEGIN IMMEDIATE``, on PostgreSQL autocommit — one statement is its own consistent snapshot),
so the check never queues behind writers and costs one round trip: a stale "not seen" only sends the delivery down the full path, where ``decide``'s claim
and the work-version primary key make the final, race-safe answer.

What the early answer does not cover (left to the full path, which reads the forge): ``cancelled``
versions (a reset tombstone or a manual trigger may run them again), ``done`` with an override,
and a version queued because its source was unreadable (a fresh delivery takes that item over).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.engine import Connection

from intake.admission_rules import repeat_reason
from intake.decision import IntakeDecision, Outcome
from intake.receipts import ReceiptDraft
from intake.seen_deliveries import final
from ledger._raw_cursor import run_raw

__all__ = ["RepeatRows", "find_repeat", "original_answer", "original_final", "blocking_reason", "unstarted"]

# deliveries by id, by body digest; the version's row; a waiting deferred item of the work key.
# ``status``: the original receipt's outcome (delivery, body), the version's status, the item's block.
_LOOKUP = text("""
SELECT 'delivery' AS kind, d.receipt_id, r.outcome AS status, r.work_key, r.input_version, r.generation,
       r.workflow_id, r.run_id,
       CASE WHEN EXISTS (SELECT 1 FROM deferred_items q WHERE q.work_key = r.work_key AND q.status = 'waiting'
                         AND q.receipt_id = d.receipt_id) THEN 1 ELSE 0 END AS queued
  FROM deliveries d LEFT JOIN receipts r ON r.id = d.receipt_id
 WHERE d.source = :source AND d.delivery_id = :delivery_id
UNION ALL
SELECT 'body', d.receipt_id, r.outcome, r.work_key, r.input_version, r.generation, r.workflow_id, r.run_id,
       CASE WHEN EXISTS (SELECT 1 FROM deferred_items q WHERE q.work_key = r.work_key AND q.status = 'waiting'
                         AND q.receipt_id = d.receipt_id) THEN 1 ELSE 0 END
  FROM deliveries d LEFT JOIN receipts r ON r.id = d.receipt_id
 WHERE d.source = :source AND d.body_digest = :body_digest
UNION ALL
SELECT 'version', v.receipt_id, v.status, v.work_key, v.input_version, v.generation, v.workflow_id, v.run_id, 0
  FROM work_versions v
 WHERE v.work_key = :work_key AND v.input_version = :input_version
UNION ALL
SELECT 'queued', q.id, q.blocked_on, q.work_key, q.input_version, NULL, NULL, NULL, 1
  FROM deferred_items q
 WHERE q.tenant = :tenant AND q.work_key = :work_key AND q.status = 'waiting'
""")

# Version states that make another admission of the same version a duplicate without a read.
# (``cancelled`` is left to the full path: whether it blocks depends on a reset and the trigger.)
_IN_FLIGHT = ("accepted", "admitted")
_ACCEPTED, _ACCEPT = "accepted", "accept"
_DONE = "done"
_SOURCE_BLOCK = "source-unavailable"


@dataclass(frozen=True)
class RepeatRows:
    """What the lookup found, by kind (each a row mapping, or None)."""

    delivery: dict | None = None
    body: dict | None = None
    version: dict | None = None
    queued: dict | None = None


_COLUMNS = ("kind", "receipt_id", "status", "work_key", "input_version", "generation", "workflow_id", "run_id",
            "queued")
_BY_DIALECT = {"sqlite": _LOOKUP.text, "postgresql": re.sub(r"(?<![:\w]):(\w+)", r"%(\1)s", _LOOKUP.text)}
"""The statement in the driver's own parameter style (sqlite3: ``:name``; psycopg: ``%(name)s``)."""


def find_repeat(conn: Connection, draft: ReceiptDraft) -> RepeatRows:
    """Run the one statement for ``draft`` (its delivery identity and its work key/version).

    Executed on the connection's DBAPI cursor: on this path SQLAlchemy's statement and result
    machinery cost several times the database's own work (profiled on SQLite: ~40 µs in sqlite3,
    ~250 µs around it). ``conn`` comes from ``ledger._engine.single_read`` (autocommit / no BEGIN)
    or from an open transaction (the race path of ``decide``), whose snapshot it then reads."""
    params = {"source": draft.source, "delivery_id": draft.delivery_id, "body_digest": draft.body_digest,
              "work_key": draft.work_key, "input_version": draft.input_version, "tenant": draft.tenant or ""}
    rows = run_raw(conn, _BY_DIALECT[conn.dialect.name], params, lambda cursor: cursor.fetchall())
    found: dict[str, dict] = {}
    for row in rows:
        found.setdefault(row[0], dict(zip(_COLUMNS, row, strict=True)))
    return RepeatRows(**found)


def original_answer(rows: RepeatRows, draft: ReceiptDraft) -> IntakeDecision | None:
    """The repeat answered from the original delivery (no row written), or None if not a repeat;
    the reason and message come from ``intake.admission_rules.repeat_reason``."""
    if rows.delivery is not None:
        row, (reason, message) = rows.delivery, repeat_reason(draft, same_body=False)
    elif rows.body is not None and draft.body_digest:
        row, (reason, message) = rows.body, repeat_reason(draft, same_body=True)
    else:
        return None
    return IntakeDecision(Outcome.REJECT, str(reason), message, receipt_id=row["receipt_id"],
                          work_key=row["work_key"], input_version=row["input_version"],
                          generation=row["generation"], workflow_id=row["workflow_id"], run_id=row["run_id"],
                          queued=bool(row["queued"]))


def original_final(rows: RepeatRows, draft: ReceiptDraft) -> bool:
    """Is the original that :func:`original_answer` answers from final, so its answer may be kept
    in process (``intake/seen_deliveries.py``)? Only for a repeat of the delivery id itself."""
    row = rows.delivery
    if row is None or row["status"] is None or row["receipt_id"] is None:
        return False
    return final(str(row["status"]), row["workflow_id"], bool(row["queued"]))


def blocking_reason(rows: RepeatRows, draft: ReceiptDraft, done_blocks: bool = True) -> str | None:
    """Why this (work key, version) is already taken — admitted, running, done or queued — or None
    when only the full path (with its forge read) can decide. ``done_blocks=False`` (the policy may
    re-run a version done under an older policy version: ``intake.rerun_done_on_policy_change``)
    leaves a ``done`` version to the full decision, which knows the version it was done under."""
    if draft.work_key is None or draft.input_version is None:
        return None
    what = f"{draft.work_key}@{draft.input_version}"
    version = rows.version
    if version is not None and (version["status"] in _IN_FLIGHT or (version["status"] == _DONE and not draft.override
                                                                 and done_blocks)):
        return f"{what} is already {version['status']} (receipt {version['receipt_id']})"
    queued = rows.queued
    if queued is not None and queued["input_version"] == draft.input_version and queued["status"] != _SOURCE_BLOCK:
        return f"{what} is already queued (deferred item {queued['receipt_id']})"
    return None


def unstarted(rows: RepeatRows, draft: ReceiptDraft) -> tuple[str, str] | None:
    """The (work key, version) this repeat shows accepted but never started, or None: its accept
    committed, then its start failed or its process died before the mark (``intake/outbox.py``). The
    caller starts it again (``IntakeService._start_unstarted``): a sender repeating a delivery is often
    repeating one whose first answer was lost to exactly that failure.

    Seen as the version row ``accepted`` with no workflow; or, for a repeat that does not name that
    version itself (a trigger naming no version: the version row is keyed by the one the forge gave),
    as the original delivery's ``accept`` receipt naming no workflow and no waiting deferred item. The
    receipt can keep no workflow id for good (a start whose mark failed, then the run ended), so it is
    only a hint: the start reads the version row again (``pending_admission``)."""
    version = rows.version
    if (version is not None and version["status"] == _ACCEPTED and version["workflow_id"] is None
            and draft.work_key is not None and draft.input_version is not None):
        return draft.work_key, draft.input_version
    row = rows.delivery if rows.delivery is not None else rows.body
    if (row is None or row["status"] != _ACCEPT or row["workflow_id"] is not None or row["queued"]
            or row["work_key"] is None or row["input_version"] is None):
        return None
    if (row["work_key"], row["input_version"]) == (draft.work_key, draft.input_version):
        return None  # the version row above is the authority (a receipt keeps no workflow id when only its mark failed)
    return str(row["work_key"]), str(row["input_version"])
