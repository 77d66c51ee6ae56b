"""Migration 0016_identity on both ledgers: rows written before it keep their values and read the
new identity columns as unknown (NULL); the downgrade removes the columns and keeps the rows.

Rows are written through the tables as they are at ``0015_trustfix`` (reflected), not through
today's models, so the test keeps its meaning when later migrations add columns.
"""

from __future__ import annotations

import sqlalchemy as sa

import ledger
from tests.ledger.test_tenancy_migration import _insert

BEFORE = "0015_trustfix"
RECEIPT_COLUMNS = {"concurrency_key", "activity_attempt"}
SIDE_EFFECT_COLUMNS = {"workflow_id", "run_id", "activity_attempt", "concurrency_key", "policy_version"}


def _columns(engine, table: str) -> set[str]:
    return {c["name"] for c in sa.inspect(engine).get_columns(table)}


def test_identity_columns_arrive_empty_on_old_rows_and_leave_on_downgrade(empty_ledger_url):
    ledger.upgrade(empty_ledger_url, BEFORE)
    engine = ledger.make_engine(empty_ledger_url)
    try:
        _insert(engine, "receipts", id="r1", work_key="acme/github:acme/api#1:review", policy_version="p1")
        _insert(engine, "side_effects", operation_key="op1", work_key="acme/github:acme/api#1:review", generation=1)
        assert not (RECEIPT_COLUMNS & _columns(engine, "receipts"))
        ledger.upgrade(empty_ledger_url, "0016_identity")
        with engine.connect() as conn:
            receipt = conn.execute(sa.text("SELECT policy_version, concurrency_key, activity_attempt FROM receipts "
                                           "WHERE id = 'r1'")).one()
            effect = conn.execute(sa.text("SELECT generation, workflow_id, run_id, activity_attempt, concurrency_key, "
                                          "policy_version FROM side_effects WHERE operation_key = 'op1'")).one()
        assert tuple(receipt) == ("p1", None, None)
        assert tuple(effect) == (1, None, None, None, None, None)
        ledger.downgrade(empty_ledger_url, BEFORE)
        engine.dispose()
        assert not (RECEIPT_COLUMNS & _columns(engine, "receipts"))
        assert not (SIDE_EFFECT_COLUMNS & _columns(engine, "side_effects"))
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM side_effects WHERE operation_key = 'op1'")).scalar() == 1
    finally:
        engine.dispose()
