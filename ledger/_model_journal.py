"""The model-response journal: each step's answer, written the moment it arrives.

Keyed by (work key, input version, generation, step). The model activity writes the
provider's response here before it does anything else with it (settle, return), so a
retried attempt of the same step — the worker died after the answer came back, or the
settle failed — returns the journaled answer instead of calling (and paying) the provider
again. Temporal's history holds the answer only once the activity *completed*; the journal
covers the gap between "the provider answered" and "Temporal recorded it".

Each row carries the digest of the request it answers: the same step of the same
generation asked with different messages (a re-run of the order in a new workflow run whose
tools answered differently) is not served the old answer; the newer request replaces it.

Failure modes: if the journal write fails (ledger down) the activity still returns the
answer (history then holds it) and leaves its reservation for the stale sweep; a retry
after such a failure calls the provider again. Rows are pruned by the retention pass
(``ledger/_retention.py``, ``maintenance.retention.model_journal``) once old and no longer
load-bearing: never while their reservation is held or their version is still running.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, DateTime, Float, Index, bindparam, select, update
from sqlalchemy.engine import Connection, Engine
from sqlmodel import Field, Session, SQLModel, col

from ledger._engine import single_read
from ledger._sql import insert_per_dialect


class ModelJournalEntry(SQLModel, table=True):
    __tablename__ = "model_journal"
    __table_args__ = (Index("ix_model_journal_created_at", "created_at"),
                      Index("ix_model_journal_reservation", "reservation_id"))

    work_key: str = Field(primary_key=True, max_length=512)
    input_version: str = Field(primary_key=True, max_length=128)
    generation: int = Field(primary_key=True)
    step: int = Field(primary_key=True)
    """The order's model call (1-based)."""
    request_digest: str = Field(max_length=64)
    response: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    cost_usd: float = Field(sa_type=Float)
    """The response's usage, priced with the order's price table."""
    reservation_id: str | None = Field(default=None, max_length=80)
    """The reservation that paid for it (settled with ``cost_usd``)."""
    attempt: int
    """The activity attempt that received it."""
    created_at: datetime = Field(sa_type=DateTime(timezone=True))


class ModelJournal:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def find(self, work_key: str, input_version: str, generation: int, step: int,
             conn: Connection | None = None) -> ModelJournalEntry | None:
        """One prebuilt statement on a ``single_read`` connection: asked before every model call (on
        SQLite a transaction would take the write lock and queue behind every writer). ``conn``: a
        ``single_read`` connection of this journal's engine the caller holds (its other reads before
        the call run on it too); another engine's is not used."""
        if conn is None or conn.engine is not self._engine:
            with single_read(self._engine) as own:
                return self.find(work_key, input_version, generation, step, own)
        row = conn.execute(_FIND, {"p_work_key": work_key, "p_input_version": input_version,
                                   "p_generation": generation, "p_step": step}).first()
        return None if row is None else ModelJournalEntry.model_validate(row._mapping)

    def record(self, entry: ModelJournalEntry) -> ModelJournalEntry:
        """Journal ``entry``; returns the row now stored. The first answer for a request wins (two
        attempts of one step racing: both return the same answer); an answer to a different
        request for the same step replaces the old one. One write transaction; the usual case, the
        step's first answer, is one prebuilt ``INSERT ... ON CONFLICT DO NOTHING RETURNING``."""
        with self._engine.begin() as conn:
            if _insert_first(conn, entry):
                return entry
            with Session(bind=conn, expire_on_commit=False) as s:  # joins the transaction above
                return _after_conflict(s, entry)


_PK = (ModelJournalEntry.__table__.c.work_key == bindparam("p_work_key"),  # type: ignore[attr-defined]
       ModelJournalEntry.__table__.c.input_version == bindparam("p_input_version"),  # type: ignore[attr-defined]
       ModelJournalEntry.__table__.c.generation == bindparam("p_generation"),  # type: ignore[attr-defined]
       ModelJournalEntry.__table__.c.step == bindparam("p_step"))  # type: ignore[attr-defined]
_FIND = select(ModelJournalEntry.__table__).where(*_PK)  # type: ignore[attr-defined]
"""The step's row, built once (building a statement costs more CPU than running it on SQLite)."""
_INSERT_FIRST = insert_per_dialect(
    ModelJournalEntry, lambda insert: insert.on_conflict_do_nothing().returning(col(ModelJournalEntry.step)))
"""Per dialect: the step's first answer, its values the statement's parameters."""


def _insert_first(conn: Connection, entry: ModelJournalEntry) -> bool:
    """Insert ``entry`` unless its step has a row already; True when it was inserted."""
    return conn.execute(_INSERT_FIRST[conn.dialect.name], entry.model_dump()).first() is not None


def _after_conflict(s: Session, entry: ModelJournalEntry) -> ModelJournalEntry:
    """:meth:`ModelJournal.record` once its insert found the step's row already there: the stored row,
    replaced by ``entry`` if it answers a different request."""
    key = (entry.work_key, entry.input_version, entry.generation, entry.step)
    stored = s.get(ModelJournalEntry, key, with_for_update=True)
    if stored is not None and stored.request_digest != entry.request_digest:
        values = entry.model_dump()
        s.execute(update(ModelJournalEntry).where(
            col(ModelJournalEntry.work_key) == entry.work_key,
            col(ModelJournalEntry.input_version) == entry.input_version,
            col(ModelJournalEntry.generation) == entry.generation, col(ModelJournalEntry.step) == entry.step)
            .values(**{k: v for k, v in values.items() if k not in
                       ("work_key", "input_version", "generation", "step")}))
        s.expire(stored)
        stored = s.get(ModelJournalEntry, key)
    if stored is None:  # inserted or found above, in this transaction
        raise LookupError(f"model journal entry {key} vanished while being recorded")
    return stored
