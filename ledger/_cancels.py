"""Operator cancel requests: who asked to cancel a run, and why — recorded before the cancel.

``starter.py cancel`` writes the request first, then cancels the workflow with a reason naming
it (``workflows/cancellation.py``). When the workflow records the cancelled outcome, the ledger
confirms the actor from this row — never from the text in Temporal, which anyone with Temporal
access could write. Failure modes:

* The cancel RPC fails after the row was written: the row says ``failed`` with the error; no
  run was cancelled, nothing refers to the row.
* There was no open run: the row says ``no-run``; nothing was cancelled.
* A request id that does not exist for the work key: the outcome is recorded as a cancel by
  ``temporal`` marked unconfirmed.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, Index, update
from sqlalchemy.engine import Engine
from sqlmodel import Field, Session, SQLModel, col, select

from ledger._sql import new_id, utcnow


class CancelRequest(SQLModel, table=True):
    __tablename__ = "cancel_requests"
    __table_args__ = (Index("ix_cancel_requests_work_key", "work_key"),)

    id: str = Field(primary_key=True, max_length=40)
    created_at: datetime = Field(sa_type=DateTime(timezone=True))
    work_key: str = Field(max_length=512)
    workflow_id: str = Field(max_length=600)
    run_id: str | None = Field(default=None, max_length=64)
    """The run the cancel was sent to (known once it was sent)."""
    actor: str = Field(max_length=128)
    reason: str = Field(max_length=500)
    status: str = Field(max_length=16)
    """``requested`` → ``sent`` | ``no-run`` | ``failed``."""
    error: str | None = Field(default=None, max_length=500)


class CancelRequests:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def record(self, work_key: str, workflow_id: str, actor: str, reason: str) -> CancelRequest:
        row = CancelRequest(id=new_id(), created_at=utcnow(), work_key=work_key, workflow_id=workflow_id,
                            actor=actor[:128], reason=reason[:500], status="requested")
        with Session(self._engine, expire_on_commit=False) as s, s.begin():
            s.add(row)
        return row

    def mark(self, request_id: str, status: str, run_id: str | None = None, error: str | None = None) -> None:
        with Session(self._engine) as s, s.begin():
            s.execute(update(CancelRequest).where(col(CancelRequest.id) == request_id)
                      .values(status=status, run_id=run_id, error=error[:500] if error else None))

    def for_work_key(self, work_key: str) -> list[CancelRequest]:
        with Session(self._engine, expire_on_commit=False) as s:
            return list(s.exec(select(CancelRequest).where(col(CancelRequest.work_key) == work_key)
                               .order_by(col(CancelRequest.created_at))))


def find_request(session: Session, request_id: str, work_key: str) -> CancelRequest | None:
    """The request a cancelled outcome names, only if it was made for this work key."""
    row = session.get(CancelRequest, request_id)
    return row if row is not None and row.work_key == work_key else None
