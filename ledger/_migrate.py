"""Versioned schema for the ledger, applied with Alembic.

Processes never create tables on their own: the launcher (or ``starter.py ledger
migrate``) upgrades the schema once, and every API/worker process checks at start-up
that the database is at the revision its code expects (:func:`require_current`), so a
half-migrated database fails loudly instead of failing on the first write.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from ledger._engine import make_engine, normalize_url
from sluicegate.errors import SluicegateError

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"


class LedgerSchemaError(SluicegateError):
    """The ledger database is not at the schema revision this code expects."""

    def __init__(self, current: str | None, expected: str) -> None:
        super().__init__(
            f"ledger schema is at revision {current!r} but this code expects {expected!r}; "
            "run `python starter.py ledger migrate` (the launcher does it for you)"
        )
        self.current = current
        self.expected = expected


def _alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", normalize_url(url).replace("%", "%%"))
    return cfg


def head_revision() -> str:
    head = ScriptDirectory.from_config(_alembic_config("sqlite://")).get_current_head()
    if head is None:
        raise RuntimeError(f"no migration in {MIGRATIONS_DIR}")
    return head


def current_revision(url: str) -> str | None:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()


def upgrade(url: str, revision: str = "head") -> str:
    """Upgrade the ledger at ``url`` to ``revision`` (default: the head) and return it."""
    command.upgrade(_alembic_config(url), revision)
    return head_revision() if revision == "head" else revision


def downgrade(url: str, revision: str) -> None:
    """Downgrade the ledger at ``url`` to ``revision`` (tests of a migration; operators roll forward)."""
    command.downgrade(_alembic_config(url), revision)


def require_current(url: str) -> None:
    """Raise :class:`LedgerSchemaError` unless the ledger is at the head revision."""
    current, expected = current_revision(url), head_revision()
    if current != expected:
        raise LedgerSchemaError(current, expected)
