"""Dead letters: failed work with its evidence and an owner, never a graveyard nobody reads.

Written when an order ends ``failed`` (retries exhausted, retry cap, a refused call). Each
row carries what the owner needs without digging: the last error, the retries spent, the
workflow and run ids, the operation keys, and the owner routed from config (by tenant, then
source, then the default). ``starter.py dlq retry`` re-submits it through intake.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, DateTime, Index, update
from sqlalchemy.engine import Engine
from sqlmodel import Field, Session, SQLModel, col, select

from ledger._sql import rowcount, utcnow


class DeadLetter(SQLModel, table=True):
    __tablename__ = "dead_letters"
    __table_args__ = (Index("ix_dead_letters_status", "status"), Index("ix_dead_letters_created_at", "created_at"),
                      Index("ix_dead_letters_admission", "work_key", "input_version", "generation"))

    id: str = Field(primary_key=True, max_length=80)
    """``dl_`` + the whole SHA-256 of (work key, version, generation): one letter per failed admission.
    Letters written before migration 0014 keep their older, readable ids."""
    created_at: datetime = Field(sa_type=DateTime(timezone=True))
    work_key: str = Field(max_length=512)
    input_version: str = Field(max_length=128)
    generation: int
    tenant: str = Field(max_length=128)
    source: str = Field(max_length=128)
    owner: str = Field(max_length=128)
    status: str = Field(max_length=16)
    """``open`` | ``retried`` | ``resolved``."""
    reason: str
    last_error: str | None = None
    retries: int = 0
    workflow_id: str | None = Field(default=None, max_length=600)
    run_id: str | None = Field(default=None, max_length=64)
    operation_keys: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    note: str | None = None


def dead_letter_id(work_key: str, version: str, generation: int) -> str:
    """The whole SHA-256 hex of the admission, never truncated: two admissions never share a letter
    id (the key, version and generation are length-prefixed, so no two triples hash the same text)."""
    text = "\n".join(f"{len(part)}:{part}" for part in (work_key, version, str(generation)))
    return "dl_" + hashlib.sha256(text.encode()).hexdigest()


class DeadLetters:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def record(self, session: Session, outcome: dict[str, Any], owner: str, workflow_id: str | None) -> None:
        """Add the letter inside the caller's transaction (the outcome and its letter commit together)."""
        letter_id = dead_letter_id(outcome["work_key"], outcome["input_version"], outcome["generation"])
        if session.exec(select(DeadLetter.id).where(
                DeadLetter.work_key == outcome["work_key"], DeadLetter.input_version == outcome["input_version"],
                DeadLetter.generation == outcome["generation"])).first() is not None:
            return  # the outcome activity retried (before or after the id scheme changed): one letter each
        session.add(DeadLetter(
            id=letter_id, created_at=utcnow(), work_key=outcome["work_key"], input_version=outcome["input_version"],
            generation=outcome["generation"], tenant=outcome.get("tenant") or "", source=outcome.get("source") or "",
            owner=owner, status="open", reason=outcome.get("reason") or "", last_error=outcome.get("last_error"),
            retries=outcome.get("retries") or 0, workflow_id=workflow_id, run_id=outcome.get("run_id"),
            operation_keys=outcome.get("operation_keys") or []))

    def list(self, status: str | None = "open", limit: int = 50) -> list[DeadLetter]:
        query = select(DeadLetter).order_by(col(DeadLetter.created_at).desc()).limit(limit)
        if status:
            query = query.where(DeadLetter.status == status)
        with Session(self._engine, expire_on_commit=False) as s:
            return list(s.exec(query))

    def get(self, letter_id: str) -> DeadLetter | None:
        with Session(self._engine, expire_on_commit=False) as s:
            return s.get(DeadLetter, letter_id)

    def close(self, letter_id: str, status: str, note: str) -> bool:
        """Move an *open* letter to ``retried`` or ``resolved`` with a note saying who and why. False
        when it was not open: one conditional statement, so two operators closing it at once cannot
        both win (the second is told, and its note does not overwrite the first's)."""
        with Session(self._engine) as s, s.begin():
            return rowcount(s.execute(update(DeadLetter).where(col(DeadLetter.id) == letter_id,
                                                               col(DeadLetter.status) == "open")
                                      .values(status=status, note=note[:500]))) == 1

    def mark(self, letter_id: str, status: str, note: str) -> bool:
        with Session(self._engine) as s, s.begin():
            return rowcount(s.execute(update(DeadLetter).where(col(DeadLetter.id) == letter_id)
                                      .values(status=status, note=note[:500]))) == 1
