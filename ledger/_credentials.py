"""Short-lived, tenant- and task-scoped credentials issued by the tool gateway.

Each mutation runs under a credential bound to (tenant, work key, generation) with a short
TTL. The gateway checks it immediately before the external call, so a kill recorded while
an activity is already running (say, during a slow reconcile) revokes the credential and
the call is refused — revocation takes effect at once, not when the process stops.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import DateTime, Index, bindparam, insert, select, update
from sqlalchemy.engine import Engine
from sqlmodel import Field, Session, SQLModel, col

from ledger._engine import single_read
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

    def issue(self, tenant: str, work_key: str, generation: int) -> str:
        now = utcnow()
        token = "sgc_" + secrets.token_urlsafe(24)
        with self._engine.begin() as conn:  # one Core insert (every mutation issues one)
            conn.execute(insert(Credential).values(id=token, tenant=tenant, work_key=work_key, generation=generation,
                                                   issued_at=now, expires_at=now + self._ttl))
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
