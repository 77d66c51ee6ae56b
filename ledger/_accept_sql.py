"""The accept's and ``mark_admitted``'s writes in ``SqlIntakeStore`` (``ledger/_intake_store.py``),
built once at import as SQLAlchemy Core statements and executed with parameter dicts.

Building these as ORM expressions on every call cost several times the database's own work on the
admission path (profiled: the accept's transaction was 27% of the webhook API's samples), as it did
for the kill lookup (``ledger/_kills.py``) and the plain decision (``ledger/_plain_decide.py``). The
SQL is the one the ORM form emitted; the caller keeps the statements' order (the lock order of
docs/architecture.md: version, receipt, work item). Since session 11 they run on the DBAPI cursor
(:class:`~ledger._prepared.Prepared`: the same SQL, compiled once by SQLAlchemy, without its per-execution
machinery, which still cost several times SQLite's own work per statement).
"""

from __future__ import annotations

from sqlalchemy import bindparam, case, func, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite

from ledger._models import Receipt, WorkItem, WorkVersion
from ledger._prepared import Prepared

_RECEIPTS = Receipt.__table__  # type: ignore[attr-defined]  # set on table models; not in SQLModel's types
_ITEMS = WorkItem.__table__  # type: ignore[attr-defined]  # set on table models; not in SQLModel's types
_VERSIONS = WorkVersion.__table__  # type: ignore[attr-defined]
RECEIPT_INSERT = insert(_RECEIPTS)
VERSION_LOCK = select(_VERSIONS.c.status).where(
    _VERSIONS.c.work_key == bindparam("wk"), _VERSIONS.c.input_version == bindparam("ver")).with_for_update()
"""Does the accept's (work key, version) have a row? Read and locked (``FOR UPDATE`` on PostgreSQL) as the
ORM's ``Session.get(..., with_for_update=True)`` does, without loading an entity: a new version (the common
case) has none; an existing one is then loaded as the entity (already locked) to be read and updated."""
VERSION_INSERT = insert(_VERSIONS)
ADMIT_ITEM = {name: d.insert(_ITEMS).values(
    work_key=bindparam("wk"), tenant=bindparam("tenant"), target_id=bindparam("target"), generation=1,
    current_version=bindparam("ver"), status="accepted", updated_at=bindparam("now")).on_conflict_do_update(
    index_elements=["work_key"], set_={"generation": _ITEMS.c.generation + 1, "current_version": bindparam("ver"),
                                      "status": "accepted", "updated_at": bindparam("now")},
).returning(_ITEMS.c.generation) for name, d in (("sqlite", sqlite), ("postgresql", postgresql))}
"""A new work item at generation 1, or the existing one's generation bumped (the fencing token)."""
_RUN_ID = bindparam("run", type_=_VERSIONS.c.run_id.type)
MARK_VERSION = update(_VERSIONS).where(
    _VERSIONS.c.work_key == bindparam("wk"), _VERSIONS.c.input_version == bindparam("ver"),
    _VERSIONS.c.generation == bindparam("gen")).values(
    status=case((_VERSIONS.c.status == "accepted", "admitted"), else_=_VERSIONS.c.status),
    workflow_id=bindparam("wf"), run_id=func.coalesce(_VERSIONS.c.run_id, _RUN_ID), updated_at=bindparam("now"))
_VERSION_RUN = select(_VERSIONS.c.run_id).where(
    _VERSIONS.c.work_key == bindparam("wk"), _VERSIONS.c.input_version == bindparam("ver"),
    _VERSIONS.c.receipt_id == _RECEIPTS.c.id).scalar_subquery()
MARK_RECEIPT = update(_RECEIPTS).where(_RECEIPTS.c.id == bindparam("rid")).values(
    workflow_id=bindparam("wf"), run_id=func.coalesce(_RECEIPTS.c.run_id, _VERSION_RUN,
                                                      bindparam("run", type_=_RECEIPTS.c.run_id.type)))
"""The receipt's run is the version's (written just before, in the same transaction, kept if the run
already recorded its end) when the version is still this receipt's; else the first run marked. A later
start of the same admission (a repeat's, the relay's) may open a run that its claim ends at once, and
must not take the receipt from the run that did the work — even when that run's own mark never
committed and it recorded its end first."""
MARK_ITEM = update(_ITEMS).where(_ITEMS.c.work_key == bindparam("wk"), _ITEMS.c.generation == bindparam("gen")).values(
    status=case((_ITEMS.c.status == "accepted", "admitted"), else_=_ITEMS.c.status),
    workflow_id=bindparam("wf"), updated_at=bindparam("now"))

LOCK_VERSION, INSERT_VERSION, INSERT_RECEIPT = Prepared(VERSION_LOCK), Prepared(VERSION_INSERT), Prepared(RECEIPT_INSERT)
UPSERT_ITEM = Prepared(ADMIT_ITEM)
MARK_VERSIONS, MARK_RECEIPTS, MARK_ITEMS = Prepared(MARK_VERSION), Prepared(MARK_RECEIPT), Prepared(MARK_ITEM)
"""The statements above on the DBAPI cursor of the caller's transaction (``ledger/_prepared.py``)."""
