"""The Alembic migrations and the SQLModel tables describe the same schema."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlmodel import SQLModel

import ledger


def test_models_match_migrations(engine):
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": False}), SQLModel.metadata)
    assert diff == []


def test_fresh_database_reports_schema_error(tmp_path):
    url = f"sqlite:///{tmp_path / 'empty.sqlite'}"
    try:
        ledger.require_current(url)
    except ledger.LedgerSchemaError as exc:
        assert exc.current is None and exc.expected == ledger.head_revision()
    else:
        raise AssertionError("an empty database must not pass the schema check")
    ledger.upgrade(url)
    ledger.require_current(url)
