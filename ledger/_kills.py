"""The kill switch's record: who stopped what, why, and when it was lifted.

Scopes: one work key, one tenant, or everything (``all``, target ``*``). A kill is in force
until lifted; lifting is recorded the same way (actor, reason, time), never deleted, so
the question "why did this stop at 03:12?" always has an answer. The gateway and the
model activity consult :meth:`KillSwitch.active_for` before every external call, so a
kill takes effect at once even for an activity already running.

Kills and admissions are serialized: an accept's ledger transaction reads the kills in force
(:func:`kill_in_force`) under a shared lock and a kill is written under the exclusive one
(PostgreSQL: a transaction-scoped advisory lock; SQLite: ``BEGIN IMMEDIATE`` already runs one
writer at a time). So a kill committed while a delivery's freshness read was in flight is seen
by the accept that follows the read, and an accept committed first is in the ledger before the
kill is.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from sqlalchemy import DateTime, Index, bindparam, or_, text, update
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Connection, Engine
from sqlmodel import Field, Session, SQLModel, col, select

from ledger._credentials import revoke_in
from ledger._engine import single_read
from ledger._inline_read import InlineReader
from ledger._sql import new_id, rowcount, utcnow

Scope = Literal["work_key", "tenant", "all"]
_KILL_LOCK = 0x5117_4B11
"""The PostgreSQL advisory lock key that orders kills against accepts (see the module docstring)."""


class Kill(SQLModel, table=True):
    __tablename__ = "kills"
    __table_args__ = (Index("ix_kills_scope_target", "scope", "target"),)

    id: str = Field(primary_key=True, max_length=40)
    scope: str = Field(max_length=16)
    target: str = Field(max_length=512)
    actor: str = Field(max_length=128)
    reason: str = Field(max_length=500)
    created_at: datetime = Field(sa_type=DateTime(timezone=True))
    lifted_at: datetime | None = Field(default=None, sa_type=DateTime(timezone=True))
    lifted_by: str | None = Field(default=None, max_length=128)
    lift_reason: str | None = Field(default=None, max_length=500)


_COVERING = select(Kill).where(
    col(Kill.lifted_at).is_(None),
    or_(col(Kill.scope) == "all", (col(Kill.scope) == "work_key") & (col(Kill.target) == bindparam("work_key")),
        (col(Kill.scope) == "tenant") & (col(Kill.target) == bindparam("tenant")))
).order_by(col(Kill.created_at)).limit(1)
"""The oldest kill in force covering a work key or its tenant (``tenant`` None: no tenant kill can match,
as ``target = NULL`` is never true). Built once: every intake decision and every model and tool call
asks, and building the expression per call cost ~25 times the database's own work (profiled: 1.4 ms
against 30 µs on SQLite)."""


def _covering(work_key: str, tenant: str | None) -> dict[str, str | None]:
    """The parameters of :data:`_COVERING`."""
    return {"work_key": work_key, "tenant": tenant or None}


_COVERING_SQLITE = _COVERING.compile(dialect=sqlite.dialect())
""":data:`_COVERING` compiled once for SQLite, run on the DBAPI cursor by :func:`_any_covering`."""


def _any_covering(conn: Connection, params: dict[str, str | None]) -> bool:
    """Is any kill in force covering these :func:`_covering` parameters? :data:`_COVERING` on the
    DBAPI cursor (SQLite): the common answer, "none", without SQLAlchemy's statement machinery, which
    costs several times SQLite's own work here (as for ``ledger/_repeats.py``)."""
    values = {**_COVERING_SQLITE.params, **params}
    driver = conn.connection.driver_connection
    assert driver is not None  # a checked-out connection has its DBAPI connection
    cursor = driver.cursor()
    try:
        cursor.execute(_COVERING_SQLITE.string, [values[name] for name in _COVERING_SQLITE.positiontup or ()])
        return cursor.fetchone() is not None
    finally:
        cursor.close()


_NEWEST = (select(col(Kill.id)).where(or_(col(Kill.scope) == "all", (col(Kill.scope) == "tenant")
                                          & (col(Kill.target) == bindparam("p_tenant"))))
           .order_by(col(Kill.created_at).desc(), col(Kill.id).desc()).limit(1))


def _lock(s: Session, shared: bool) -> None:
    if s.get_bind().dialect.name == "postgresql":
        fn = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
        s.execute(text(f"SELECT {fn}(:key)"), {"key": _KILL_LOCK})


def kill_in_force(s: Session, work_key: str, tenant: str | None) -> Kill | None:
    """Inside an accept's transaction: the oldest kill in force covering the work, read after
    any kill being written has committed (the shared side of the kill lock)."""
    _lock(s, shared=True)
    return s.execute(_COVERING, _covering(work_key, tenant)).scalars().first()


class KillSwitch:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._inline = InlineReader.for_engine(engine)
        """SQLite: :meth:`active_for_inline` on a connection of its own (``ledger/_inline_read.py``)."""

    def kill(self, scope: Scope, target: str, actor: str, reason: str) -> Kill:
        row = Kill(id=new_id(), scope=scope, target="*" if scope == "all" else target, actor=actor,
                   reason=reason[:500], created_at=utcnow())
        with Session(self._engine, expire_on_commit=False) as s, s.begin():
            _lock(s, shared=False)
            s.add(row)
            revoke_in(s, scope, row.target, f"kill {row.id} by {actor}: {reason}")
        return row

    def unkill(self, scope: Scope, target: str, actor: str, reason: str) -> int:
        """Lift every kill in force for exactly this scope and target; returns how many."""
        target = "*" if scope == "all" else target
        with Session(self._engine) as s, s.begin():
            return rowcount(s.execute(update(Kill).where(col(Kill.scope) == scope, col(Kill.target) == target,
                                                         col(Kill.lifted_at).is_(None))
                                      .values(lifted_at=utcnow(), lifted_by=actor, lift_reason=reason[:500])))

    def active_for(self, work_key: str, tenant: str | None) -> Kill | None:
        """The oldest kill in force that covers this work key or its tenant, if any. One statement on a
        :func:`~ledger._engine.single_read` connection: every model and tool call asks, and on SQLite
        a transaction would take the write lock (``BEGIN IMMEDIATE``) and queue behind every writer."""
        with single_read(self._engine) as conn:
            row = conn.execute(_COVERING, _covering(work_key, tenant)).first()  # Core: no Session per call
        return None if row is None else Kill.model_validate(row._mapping)

    def active_for_inline(self, work_key: str, tenant: str | None) -> tuple[Kill | None] | None:
        """:meth:`active_for` on the calling thread (the API's event loop) if it can answer at once:
        ``(kill or None,)``. SQLite only, its own connection, a 20 ms busy timeout; None (PostgreSQL,
        or the connection busy): ask :meth:`active_for` in a worker thread. Intake asks before every
        decision of a new delivery, so on SQLite this saves a thread hop per delivery."""
        if self._inline is None:
            return None
        params = _covering(work_key, tenant)

        def read(conn: Connection) -> tuple[Kill | None]:
            if not _any_covering(conn, params):
                return (None,)
            row = conn.execute(_COVERING, params).first()  # rare: a kill in force, read typed
            return (None if row is None else Kill.model_validate(row._mapping),)
        return self._inline.run(read)

    def newest_covering_tenant(self, tenant: str | None) -> str | None:
        """Id of the newest kill ever recorded (lifted or not) for this tenant or for everything.

        The worker's model-client cache compares it with the one its client was built under: a
        kill since then means the client is rebuilt (the key re-read), even when no call of the
        tenant reached this worker while the kill was in force."""
        with single_read(self._engine) as conn:  # asked before every model call: one prebuilt statement
            return conn.execute(_NEWEST, {"p_tenant": tenant or None}).scalar()

    def in_force(self) -> list[Kill]:
        with Session(self._engine, expire_on_commit=False) as s:
            return list(s.exec(select(Kill).where(col(Kill.lifted_at).is_(None)).order_by(col(Kill.created_at))))
