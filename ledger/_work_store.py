"""Run outcomes written back to the work ledger by the agent workflow (via an activity), and by
the run reconciler for runs that closed without writing one.

Writes are fenced by generation: an outcome from an older admission of the work key never
overwrites what a newer one recorded. The reconciler also names the status it saw
(``only_from``): if the run recorded its own outcome in between, nothing is written twice.
A cancelled outcome's actor is confirmed from the recorded cancel request (``_cancels.py``),
not taken from the text Temporal carried. Failed, terminated and timed-out outcomes open a
dead letter in the same transaction; cancelled ones never do (a person decided).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Callable, Collection

from sqlalchemy import bindparam, select, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from ledger._cancels import find_request
from ledger._dead_letters import DeadLetters
from ledger._engine import single_read, snapshot_read
from ledger._models import Receipt, WorkItem, WorkVersion
from ledger._sql import rowcount, utcnow
from workflows.cancellation import FROM_TEMPORAL, confirmed, unconfirmed
from workflows.contracts import NEEDS_A_PERSON, RunStatus

NOTED_ON_RECEIPT = frozenset({RunStatus.SUPERSEDED, RunStatus.CANCELLED, RunStatus.TERMINATED, RunStatus.TIMED_OUT})
"""Outcomes whose reason is appended to the admission receipt's message (``; run <reason>``)."""


@dataclass(frozen=True)
class OpenVersion:
    """A version a run owns, as the reconciler compares it with Temporal."""

    work_key: str
    input_version: str
    generation: int
    status: str
    workflow_id: str | None
    run_id: str | None
    """The run the version was signalled into (it may have continued as new since)."""
    receipt_id: str
    tenant: str
    source: str


class WorkStore:
    def __init__(self, engine: Engine, owner_for: Callable[[str, str], str] | None = None) -> None:
        """``owner_for(tenant, source)`` routes a dead letter to its owner."""
        self._engine = engine
        self._owner_for = owner_for or (lambda tenant, source: "unassigned")

    def record_outcome(self, *, work_key: str, input_version: str, generation: int, status: str,
                       run_id: str | None, result: dict[str, Any], receipt_id: str | None = None,
                       operation_keys: list[str] | None = None, external_ids: list[str] | None = None,
                       only_from: Collection[str] | None = None) -> bool:
        """Record a run's end (and the mutations it made on its admission receipt); returns
        False when a newer generation owns the version — or, with ``only_from``, when the
        version is no longer in one of those statuses (then nothing at all is written)."""
        now = utcnow()
        with Session(self._engine) as s, s.begin():
            if status == RunStatus.CANCELLED:
                result = _confirm_cancel(s, work_key, result)
            ended = {"status": status, "result": result, "run_id": run_id, "updated_at": now}
            if only_from is None:  # the usual run end: one prebuilt statement
                done = rowcount(s.connection().execute(_END_VERSION, {
                    "p_work_key": work_key, "p_input_version": input_version, "p_generation": generation, **ended}))
            else:
                done = rowcount(s.execute(update(WorkVersion).where(
                    col(WorkVersion.work_key) == work_key, col(WorkVersion.input_version) == input_version,
                    col(WorkVersion.generation) == generation, col(WorkVersion.status).in_(list(only_from)))
                    .values(**ended)))
            if only_from is not None and done == 0:
                return False
            if receipt_id is not None:
                values: dict[str, Any] = {"operation_keys": operation_keys or [], "external_ids": external_ids or []}
                if status in NOTED_ON_RECEIPT:
                    values["message"] = col(Receipt.message) + f"; run {result.get('reason', status)}"
                s.execute(update(Receipt).where(col(Receipt.id) == receipt_id).values(**values))
            s.connection().execute(_END_ITEM, {"p_work_key": work_key, "p_generation": generation, "status": status,
                                               "updated_at": now})
            if status in NEEDS_A_PERSON:
                row = s.execute(select(col(WorkVersion.workflow_id), col(WorkVersion.generation)).where(
                    col(WorkVersion.work_key) == work_key, col(WorkVersion.input_version) == input_version)).first()
                if done == 0 and row is not None and row.generation > generation:
                    return False  # a superseded generation's end pages nobody: the newer one owns the version
                workflow_id = row.workflow_id if row is not None else None
                owner = self._owner_for(result.get("tenant") or "", result.get("source") or "")
                identity = {"work_key": work_key, "input_version": input_version, "generation": generation,
                            "run_id": run_id}
                DeadLetters(self._engine).record(s, {**result, **identity}, owner, workflow_id)
        return done == 1

    def already_recorded(self, *, work_key: str, input_version: str, generation: int, status: str,
                         run_id: str | None) -> bool:
        """Does the version row already hold this run's end (same generation, status and run)? A ledger
        write made as a local activity (patch ``lean-loop-steps``) can run again — its marker is lost
        when the workflow task that carried it fails, or a cancel re-records the order — and a second
        write must not append the receipt's note or count the run again."""
        with single_read(self._engine) as conn:  # one prebuilt statement, no write lock
            row = conn.execute(_VERSION_END, {"p_work_key": work_key, "p_input_version": input_version}).first()
        return row is not None and tuple(row) == (generation, status, run_id)

    def standing(self, work_key: str, input_version: str, with_receipt: bool = False) -> tuple:
        """The work item and the version row as the ledger holds them now (read-only): what an
        order checks before it runs (``activities.work_ledger.claim_order``); ``with_receipt``: also
        the receipt the version row names (None when it has none). Rows (None when missing) of the
        columns the claim reads: item (generation, current_version), version (generation, status,
        receipt_id), receipt (id, outcome, work_key, input_version, generation, tenant, created_at)."""
        # Read-only, several statements that must agree: one read snapshot, no write lock; the
        # statements are built once (Core rows: no Session, no ORM identity map per claim).
        with snapshot_read(self._engine) as conn:
            item = conn.execute(_ITEM_STANDING, {"p_work_key": work_key}).first()
            version = conn.execute(_VERSION_STANDING, {"p_work_key": work_key, "p_input_version": input_version}).first()
            if not with_receipt:
                return item, version
            receipt = (conn.execute(_RECEIPT_STANDING, {"p_id": version.receipt_id}).first()
                       if version is not None else None)
            return item, version, receipt

    def receipt_created_at(self, receipt_id: str) -> datetime | None:
        """When the receipt was written (None: no such receipt). One statement, no write lock."""
        with single_read(self._engine) as conn:
            return conn.execute(_RECEIPT_CREATED, {"p_id": receipt_id}).scalar()

    def open_versions(self, statuses: Collection[str], older_than_seconds: float, limit: int) -> list[OpenVersion]:
        """Versions in ``statuses`` last written longer ago than the grace period, oldest first."""
        cutoff = utcnow() - timedelta(seconds=older_than_seconds)
        query = (select(col(WorkVersion.work_key), col(WorkVersion.input_version), col(WorkVersion.generation),
                        col(WorkVersion.status), col(WorkVersion.workflow_id), col(WorkVersion.run_id),
                        col(WorkVersion.receipt_id), col(Receipt.tenant), col(Receipt.source))
                 .join(Receipt, col(Receipt.id) == col(WorkVersion.receipt_id), isouter=True)
                 .where(col(WorkVersion.status).in_(list(statuses)), col(WorkVersion.updated_at) < cutoff)
                 .order_by(col(WorkVersion.updated_at)).limit(limit))
        with self._engine.connect() as conn:
            return [OpenVersion(*row[:7], row.tenant or "", row.source or "") for row in conn.execute(query)]


_ITEM_STANDING = select(col(WorkItem.generation), col(WorkItem.current_version)).where(
    col(WorkItem.work_key) == bindparam("p_work_key"))
_VERSION_STANDING = select(col(WorkVersion.generation), col(WorkVersion.status), col(WorkVersion.receipt_id)).where(
    col(WorkVersion.work_key) == bindparam("p_work_key"), col(WorkVersion.input_version) == bindparam("p_input_version"))
_RECEIPT_STANDING = select(col(Receipt.id), col(Receipt.outcome), col(Receipt.work_key), col(Receipt.input_version),
                           col(Receipt.generation), col(Receipt.tenant), col(Receipt.created_at)).where(
    col(Receipt.id) == bindparam("p_id"))
_RECEIPT_CREATED = select(col(Receipt.created_at)).where(col(Receipt.id) == bindparam("p_id"))

# The statements of every run's end, built once (building one costs more CPU than running it on SQLite);
# the SET clause of the updates is their parameters'.
_END_VERSION = update(WorkVersion).where(col(WorkVersion.work_key) == bindparam("p_work_key"),
                                         col(WorkVersion.input_version) == bindparam("p_input_version"),
                                         col(WorkVersion.generation) == bindparam("p_generation"))
_END_ITEM = update(WorkItem).where(col(WorkItem.work_key) == bindparam("p_work_key"),
                                   col(WorkItem.generation) == bindparam("p_generation"))
_VERSION_END = (select(col(WorkVersion.generation), col(WorkVersion.status), col(WorkVersion.run_id))
                .where(col(WorkVersion.work_key) == bindparam("p_work_key"),
                       col(WorkVersion.input_version) == bindparam("p_input_version")))


def _confirm_cancel(s: Session, work_key: str, result: dict[str, Any]) -> dict[str, Any]:
    """Who cancelled: the recorded request's actor and reason, or ``temporal``."""
    request_id = result.get("cancel_request")
    if not request_id:
        return {**result, "cancelled_by": FROM_TEMPORAL}
    request = find_request(s, request_id, work_key)
    if request is None:
        return {**result, "cancelled_by": FROM_TEMPORAL, "reason": unconfirmed(result.get("reason") or ""),
                "cancel_request": None}
    return {**result, "cancelled_by": request.actor, "reason": confirmed(request.actor, request.reason)}
