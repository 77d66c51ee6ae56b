"""The kill switch's record: who stopped what, why, and when it was lifted.

Scopes: one work key, one tenant, or everything (``all``, target ``*``). A kill is in force
until lifted; lifting is recorded the same way (actor, reason, time), never deleted, so
the question "why did this stop at 03:12?" always has an answer. The gateway and the
model activity consult :meth:`KillSwitch.active_for` before every external call, so a
kill takes effect at once even for an activity already running.

Kills are serialized with admissions and with credential issues (``ledger/_kill_rows.py``): an
accept's ledger transaction reads the kills in force (:func:`kill_in_force`), and the credential
broker issues a tool call's credential only if no kill covers its work, both under a shared lock,
while a kill is written (and revokes the credentials it covers) under the exclusive one
(PostgreSQL: a transaction-scoped advisory lock; SQLite: ``BEGIN IMMEDIATE`` already runs one
writer at a time). So a kill committed while a delivery's freshness read was in flight is seen
by the accept that follows the read, and an accept committed first is in the ledger before the
kill is; a kill committed after a tool call's own kill check is seen by its credential issue,
and a credential issued first is revoked by the kill.
"""

from __future__ import annotations

from typing import Literal

from sqlalchemy import bindparam, or_, update
from sqlalchemy.engine import Connection, Engine
from sqlmodel import Session, col, select

from ledger._credentials import revoke_in
from ledger._kill_rows import COVERING, Kill, covering, lock_kills
from ledger._engine import single_read
from ledger._inline_read import InlineReader
from ledger._prepared import Prepared
from ledger._sql import new_id, rowcount, utcnow

Scope = Literal["work_key", "tenant", "all"]

_COVERING = Prepared(COVERING)
""":data:`~ledger._kill_rows.COVERING` on the DBAPI cursor (``ledger/_prepared.py``)."""


def _any_covering(conn: Connection, params: dict[str, str | None]) -> bool:
    """Is any kill in force covering these :func:`covering` parameters? :data:`COVERING` on the
    DBAPI cursor (SQLite, PostgreSQL): the common answer, "none", without SQLAlchemy's statement
    machinery, which costs several times the database's own work here (as for ``ledger/_repeats.py``)."""
    return _COVERING.first(conn, params) is not None


_NEWEST = (select(col(Kill.id)).where(or_(col(Kill.scope) == "all", (col(Kill.scope) == "tenant")
                                          & (col(Kill.target) == bindparam("p_tenant"))))
           .order_by(col(Kill.created_at).desc(), col(Kill.id).desc()).limit(1))


def kill_in_force(s: Session, work_key: str, tenant: str | None) -> Kill | None:
    """Inside an accept's transaction: the oldest kill in force covering the work, read after
    any kill being written has committed (the shared side of the kill lock). Asked on the DBAPI
    cursor (``ledger/_prepared.py``); only a kill found is read again as the entity (rare; under the
    shared lock no kill is written or lifted in between, and SQLite's ``BEGIN IMMEDIATE`` excludes it)."""
    lock_kills(s, shared=True)
    params = covering(work_key, tenant)
    if not _any_covering(s.connection(), params):
        return None
    return s.execute(COVERING, params).scalars().first()


class KillSwitch:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._inline = InlineReader.for_engine(engine)
        """SQLite: :meth:`active_for_inline` on a connection of its own (``ledger/_inline_read.py``)."""

    def kill(self, scope: Scope, target: str, actor: str, reason: str) -> Kill:
        row = Kill(id=new_id(), scope=scope, target="*" if scope == "all" else target, actor=actor,
                   reason=reason[:500], created_at=utcnow())
        with Session(self._engine, expire_on_commit=False) as s, s.begin():
            lock_kills(s, shared=False)
            s.add(row)
            revoke_in(s, scope, row.target, f"kill {row.id} by {actor}: {reason}")
        return row

    def unkill(self, scope: Scope, target: str, actor: str, reason: str) -> int:
        """Lift every kill in force for exactly this scope and target; returns how many."""
        target = "*" if scope == "all" else target
        with Session(self._engine) as s, s.begin():
            # Exclusive, as a kill: a reader under the shared lock (an accept, a credential issue) that saw
            # the kill reads it again in its next statement and must still find it (ledger/_credentials.py).
            lock_kills(s, shared=False)
            return rowcount(s.execute(update(Kill).where(col(Kill.scope) == scope, col(Kill.target) == target,
                                                         col(Kill.lifted_at).is_(None))
                                      .values(lifted_at=utcnow(), lifted_by=actor, lift_reason=reason[:500])))

    def reads(self) -> Connection:
        """A :func:`~ledger._engine.single_read` connection of this switch's engine, for a caller that
        asks several one-statement reads in a row (the model call: the kill, the client's kill mark,
        the journal) on one connection."""
        return single_read(self._engine)

    def active_for(self, work_key: str, tenant: str | None, conn: Connection | None = None) -> Kill | None:
        """The oldest kill in force that covers this work key or its tenant, if any. One statement on a
        :func:`~ledger._engine.single_read` connection: every model and tool call asks, and on SQLite
        a transaction would take the write lock (``BEGIN IMMEDIATE``) and queue behind every writer.
        ``conn``: such a connection of this engine (:meth:`reads`) the caller holds."""
        if conn is None or conn.engine is not self._engine:
            with single_read(self._engine) as own:
                return self.active_for(work_key, tenant, own)
        row = conn.execute(COVERING, covering(work_key, tenant)).first()  # Core: no Session per call
        return None if row is None else Kill.model_validate(row._mapping)

    def active_for_inline(self, work_key: str, tenant: str | None) -> tuple[Kill | None] | None:
        """:meth:`active_for` on the calling thread (the API's event loop) if it can answer at once:
        ``(kill or None,)``. SQLite only, its own connection, a 20 ms busy timeout; None (PostgreSQL,
        or the connection busy): ask :meth:`active_for` in a worker thread. Intake asks before every
        decision of a new delivery, so on SQLite this saves a thread hop per delivery."""
        if self._inline is None:
            return None
        params = covering(work_key, tenant)

        def read(conn: Connection) -> tuple[Kill | None]:
            if not _any_covering(conn, params):
                return (None,)
            row = conn.execute(COVERING, params).first()  # rare: a kill in force, read typed
            return (None if row is None else Kill.model_validate(row._mapping),)
        return self._inline.run(read)

    def newest_covering_tenant(self, tenant: str | None, conn: Connection | None = None) -> str | None:
        """Id of the newest kill ever recorded (lifted or not) for this tenant or for everything.

        The worker's model-client cache compares it with the one its client was built under: a
        kill since then means the client is rebuilt (the key re-read), even when no call of the
        tenant reached this worker while the kill was in force."""
        if conn is None or conn.engine is not self._engine:
            with single_read(self._engine) as own:  # asked before every model call: one prebuilt statement
                return self.newest_covering_tenant(tenant, own)
        return conn.execute(_NEWEST, {"p_tenant": tenant or None}).scalar()

    def in_force(self) -> list[Kill]:
        with Session(self._engine, expire_on_commit=False) as s:
            return list(s.exec(select(Kill).where(col(Kill.lifted_at).is_(None)).order_by(col(Kill.created_at))))
