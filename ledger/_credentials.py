"""Short-lived, tenant- and task-scoped credentials issued by the tool gateway.

Each mutation runs under a credential bound to (tenant, work key, generation) with a short
TTL. The gateway checks it immediately before the external call, so a kill recorded while
an activity is already running (say, during a slow reconcile) revokes the credential and
the call is refused — revocation takes effect at once, not when the process stops.

Issue and kill are ordered (``ledger/_kill_rows.py``): the issue runs under the shared kill lock and
inserts the credential only if no kill covers the work, in one statement. A kill committed after the
gateway's own kill check but before the issue is therefore seen by the issue (no credential: the
call is refused), and a kill that comes after the issue waits for it and revokes what it issued.
Without this, that one call ran under a fresh credential the kill never saw.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import DateTime, Index, bindparam, insert, select, update
from sqlalchemy.engine import Engine
from sqlmodel import Field, Session, SQLModel, col

from ledger._engine import single_read
from ledger._kill_rows import COVERING, Kill, covering, lock_kills
from ledger._sql import as_utc, rowcount, utcnow


class Credential(SQLModel, table=True):
    __tablename__ = "credentials"
    __table_args__ = (Index("ix_credentials_scope", "tenant", "work_key"),
                      Index("ix_credentials_expires_at", "expires_at"))

    id: str = Field(primary_key=True, max_length=64)
    tenant: str = Field(max_length=128)
    work_key: str = Field(max_length=512)
    generation: int
    issued_at: datetime = Field(sa_type=DateTime(timezone=True))
    expires_at: datetime = Field(sa_type=DateTime(timezone=True))
    revoked_at: datetime | None = Field(default=None, sa_type=DateTime(timezone=True))
    revoked_reason: str | None = Field(default=None, max_length=500)


@dataclass(frozen=True)
class CredentialProblem:
    """Why a credential may not be used; ``revoked`` ones are final (a kill), others may be re-issued."""

    revoked: bool
    message: str


class CredentialBroker:
    def __init__(self, engine: Engine, ttl: timedelta = timedelta(minutes=5)) -> None:
        self._engine = engine
        self._ttl = ttl

    def issue(self, tenant: str, work_key: str, generation: int) -> str | Kill:
        """A new credential's token, or the kill in force that covers the work (then none is issued)."""
        now = utcnow()
        token = "sgc_" + secrets.token_urlsafe(24)
        with self._engine.begin() as conn:  # Core statements (every mutation issues one)
            lock_kills(conn, shared=True)  # PostgreSQL: after any kill being written has committed
            issued = conn.execute(_ISSUE_UNLESS_KILLED, {
                "p_id": token, "p_tenant": tenant, "p_work_key": work_key, "p_generation": generation,
                "p_issued_at": now, "p_expires_at": now + self._ttl, **covering(work_key, tenant)}).scalar()
            if issued is None:  # a kill covers the work; read it under the same lock, so it is still in force
                return Kill.model_validate(conn.execute(COVERING, covering(work_key, tenant)).one()._mapping)
        return token

    def problem(self, token: str) -> CredentialProblem | None:
        """``None`` when the credential may be used now, else why not."""
        with single_read(self._engine) as conn:  # one prebuilt statement, no write lock
            cred = conn.execute(_STANDING, {"p_id": token}).first()
        if cred is None:
            return CredentialProblem(False, "unknown credential")
        if cred.revoked_at is not None:
            return CredentialProblem(True, f"credential revoked: {cred.revoked_reason}")
        if as_utc(cred.expires_at) <= utcnow():
            return CredentialProblem(False, "credential expired")
        return None


_CREDENTIALS = Credential.__table__  # type: ignore[attr-defined]  # set on table models; not in SQLModel's types
_ISSUE_UNLESS_KILLED = insert(Credential).from_select(
    ["id", "tenant", "work_key", "generation", "issued_at", "expires_at"],
    select(*(bindparam(f"p_{name}", type_=_CREDENTIALS.c[name].type)
             for name in ("id", "tenant", "work_key", "generation", "issued_at", "expires_at")))
    .where(~COVERING.exists())).returning(_CREDENTIALS.c.id)
"""The credential's row, inserted only while no kill covers its work (one statement: check and issue);
returns its id, or no row (psycopg reports no rowcount for an INSERT ... SELECT: -1)."""

_STANDING = (select(col(Credential.revoked_at), col(Credential.revoked_reason), col(Credential.expires_at))
             .where(col(Credential.id) == bindparam("p_id")))


def revoke_in(session: Session, scope: str, target: str, reason: str) -> int:
    """Revoke live credentials a kill scope covers, inside the kill's own transaction."""
    stmt = update(Credential).where(col(Credential.revoked_at).is_(None))
    if scope == "work_key":
        stmt = stmt.where(col(Credential.work_key) == target)
    elif scope == "tenant":
        stmt = stmt.where(col(Credential.tenant) == target)
    return rowcount(session.execute(stmt.values(revoked_at=utcnow(), revoked_reason=reason[:500])))
