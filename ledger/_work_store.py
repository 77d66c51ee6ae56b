"""Run outcomes written back to the work ledger by the agent workflow (via an activity).

Writes are fenced by generation: an outcome from an older admission of the work key
never overwrites what a newer one recorded.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlmodel import Session

from ledger._models import WorkItem, WorkVersion
from ledger._sql import utcnow


class WorkStore:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def record_outcome(self, *, work_key: str, input_version: str, generation: int, status: str,
                       run_id: str | None, result: dict[str, Any]) -> bool:
        """Record a run's end; returns False when a newer generation owns the version."""
        now = utcnow()
        with Session(self._engine) as s, s.begin():
            done = s.execute(update(WorkVersion)
                             .where(WorkVersion.work_key == work_key, WorkVersion.input_version == input_version,
                                    WorkVersion.generation == generation)
                             .values(status=status, result=result, run_id=run_id, updated_at=now)).rowcount
            s.execute(update(WorkItem).where(WorkItem.work_key == work_key, WorkItem.generation == generation)
                      .values(status=status, updated_at=now))
        return done == 1
