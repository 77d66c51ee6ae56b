"""Run outcomes written back to the work ledger by the agent workflow (via an activity).

Writes are fenced by generation: an outcome from an older admission of the work key
never overwrites what a newer one recorded.
"""

from __future__ import annotations

from typing import Any, Callable

from sqlalchemy import select, update
from sqlalchemy.engine import Engine
from sqlmodel import Session

from ledger._dead_letters import DeadLetters
from ledger._models import Receipt, WorkItem, WorkVersion
from ledger._sql import utcnow


class WorkStore:
    def __init__(self, engine: Engine, owner_for: Callable[[str, str], str] | None = None) -> None:
        """``owner_for(tenant, source)`` routes a dead letter to its owner."""
        self._engine = engine
        self._owner_for = owner_for or (lambda tenant, source: "unassigned")

    def record_outcome(self, *, work_key: str, input_version: str, generation: int, status: str,
                       run_id: str | None, result: dict[str, Any], receipt_id: str | None = None,
                       operation_keys: list[str] | None = None, external_ids: list[str] | None = None) -> bool:
        """Record a run's end (and the mutations it made on its admission receipt); returns
        False when a newer generation owns the version."""
        now = utcnow()
        with Session(self._engine) as s, s.begin():
            if receipt_id is not None:
                values: dict[str, Any] = {"operation_keys": operation_keys or [], "external_ids": external_ids or []}
                if status == "superseded":
                    values["message"] = Receipt.message + f"; run {result.get('reason', 'superseded')}"
                s.execute(update(Receipt).where(Receipt.id == receipt_id).values(**values))
            done = s.execute(update(WorkVersion)
                             .where(WorkVersion.work_key == work_key, WorkVersion.input_version == input_version,
                                    WorkVersion.generation == generation)
                             .values(status=status, result=result, run_id=run_id, updated_at=now)).rowcount
            s.execute(update(WorkItem).where(WorkItem.work_key == work_key, WorkItem.generation == generation)
                      .values(status=status, updated_at=now))
            if status == "failed":
                workflow_id = s.execute(select(WorkVersion.workflow_id).where(
                    WorkVersion.work_key == work_key, WorkVersion.input_version == input_version)).scalar()
                owner = self._owner_for(result.get("tenant") or "", result.get("source") or "")
                identity = {"work_key": work_key, "input_version": input_version, "generation": generation,
                            "run_id": run_id}
                DeadLetters(self._engine).record(s, {**result, **identity}, owner, workflow_id)
        return done == 1

    def standing(self, work_key: str, input_version: str) -> tuple[WorkItem | None, WorkVersion | None]:
        """The work item and the version row as the ledger holds them now (read-only): what an
        order checks before it runs (``sluicegate.ledger.claim_order``)."""
        with Session(self._engine, expire_on_commit=False) as s:
            return s.get(WorkItem, work_key), s.get(WorkVersion, (work_key, input_version))
