"""Migration 0010_tenancy on both ledgers: a ledger written before tenancy gets tenant-first work keys.

Each test builds a fresh database at the revision before tenancy (``0011_retention``: the
trust, outcomes and retention migrations are in), writes rows the way the code before tenancy
did (keys ``github:<owner>/<repo>#<n>:review``), upgrades to the head and reads the rows back.
Rows are written through the tables as they are at that revision (reflected), not through
today's models, so the test keeps meaning the same when later migrations add columns.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

import ledger
from intake.capacity.payload import from_payload

BEFORE = "0011_retention"
A1, B2, NO_TENANT, NO_ITEM = ("github:acme/api#1:review", "github:acme/api#2:review", "github:x/y#3:review",
                              "github:gone/x#9:review")


def _filler(column: sa.Column):
    t = column.type
    if isinstance(t, sa.DateTime):
        return datetime.now(UTC)
    if isinstance(t, (sa.Integer, sa.Float)):
        return 0
    if isinstance(t, sa.JSON):
        return []
    return "x"


def _insert(engine, table: str, **values) -> None:
    """One row with ``values``; every other NOT NULL column gets a plain filler."""
    tbl = sa.Table(table, sa.MetaData(), autoload_with=engine)
    row = {c.name: _filler(c) for c in tbl.columns if not c.nullable and c.name not in values}
    with engine.begin() as conn:
        conn.execute(tbl.insert().values(**row, **values))


def _column(engine, table: str, column: str, where: str = "1 = 1") -> list:
    with engine.connect() as conn:
        return sorted(r[0] for r in conn.execute(sa.text(f"SELECT {column} FROM {table} WHERE {where}")))


def _old_ledger(url: str):
    ledger.upgrade(url, BEFORE)
    engine = ledger.make_engine(url)
    for key, tenant in ((A1, "acme"), (B2, "beta"), (NO_TENANT, "")):
        _insert(engine, "work_items", work_key=key, tenant=tenant, target_id=key.split(":")[1], generation=1,
                status="done")
        _insert(engine, "work_versions", work_key=key, input_version="sha", generation=1, status="done",
                receipt_id=f"r-{key}")
    _insert(engine, "side_effects", operation_key="op_a1", work_key=A1, operation="post_review_comment",
            target_version="sha", generation=1, status="done")
    _insert(engine, "budget_reservations", id="res-1", work_key=B2, scopes="tenant:beta,global", status="settled")
    _insert(engine, "kills", id="k-key", scope="work_key", target=A1, actor="a", reason="r")
    _insert(engine, "kills", id="k-gone", scope="work_key", target=NO_ITEM, actor="a", reason="r")
    _insert(engine, "kills", id="k-tenant", scope="tenant", target="acme", actor="a", reason="r")
    _insert(engine, "receipts", id="rc-own", tenant="acme", work_key=A1)
    _insert(engine, "receipts", id="rc-via-item", tenant=None, work_key=B2)
    _insert(engine, "receipts", id="rc-orphan", tenant=None, work_key=NO_ITEM)
    _insert(engine, "receipts", id="rc-nokey", tenant="acme", work_key=None)
    _insert(engine, "capacity_holds", work_key=A1, slot_key="tenant:acme", tenant="acme")
    payload = {"envelope": {"id": "d1", "source": "github", "type": "pull_request.opened", "subject": "acme/api#1",
                            "time": None, "received_at": datetime.now(UTC).isoformat(), "trigger_kind": "event",
                            "tenant": "acme", "actor": None, "data": {}},
               "candidate": {"work_key": A1, "owner": "acme", "repo": "api", "number": 1, "input_version": "sha",
                             "tenant": "acme", "draft": False}}
    _insert(engine, "deferred_items", id="q-1", tenant="acme", source="github", work_key=A1, status="waiting",
            blocked_on="capacity", receipt_id="rc-own", payload=payload)
    _insert(engine, "dead_letters", id="dl-1", work_key=B2, input_version="sha", tenant="beta", source="github",
            owner="o", status="open", reason="r")
    _insert(engine, "credentials", id="cr-1", tenant="acme", work_key=A1)
    _insert(engine, "cancel_requests", id="cx-1", work_key=A1, workflow_id=f"agent/{A1}", actor="a", reason="r",
            status="sent")
    _insert(engine, "cancel_requests", id="cx-gone", work_key=NO_ITEM, workflow_id=f"agent/{NO_ITEM}", actor="a",
            reason="r", status="no-run")
    return engine


def test_upgrade_puts_each_rows_tenant_in_front_of_its_work_key(empty_ledger_url):
    engine = _old_ledger(empty_ledger_url)
    try:
        assert ledger.upgrade(empty_ledger_url) == ledger.head_revision()
        new_a1, new_b2 = "acme/" + A1, "beta/" + B2
        assert _column(engine, "work_items", "work_key") == sorted([new_a1, new_b2, NO_TENANT])
        assert _column(engine, "work_versions", "work_key") == sorted([new_a1, new_b2, NO_TENANT])
        assert _column(engine, "side_effects", "work_key") == [new_a1]
        assert _column(engine, "side_effects", "operation_key") == ["op_a1"]  # a run in flight still matches it
        assert _column(engine, "budget_reservations", "work_key") == [new_b2]
        assert _column(engine, "kills", "target", "id = 'k-key'") == [new_a1]
        assert _column(engine, "kills", "target", "id = 'k-gone'") == [NO_ITEM]  # no tenant to be found: as it was
        assert _column(engine, "kills", "target", "id = 'k-tenant'") == ["acme"]
        assert _column(engine, "receipts", "work_key", "id = 'rc-own'") == [new_a1]
        assert _column(engine, "receipts", "work_key", "id = 'rc-via-item'") == [new_b2]
        assert _column(engine, "receipts", "work_key", "id = 'rc-orphan'") == [NO_ITEM]
        assert _column(engine, "receipts", "work_key", "id = 'rc-nokey'") == [None]
        assert _column(engine, "capacity_holds", "work_key") == [new_a1]
        assert _column(engine, "deferred_items", "work_key") == [new_a1]
        assert _column(engine, "dead_letters", "work_key") == [new_b2]
        assert _column(engine, "credentials", "work_key") == [new_a1]
        assert _column(engine, "cancel_requests", "work_key", "id = 'cx-1'") == [new_a1]
        assert _column(engine, "cancel_requests", "work_key", "id = 'cx-gone'") == [NO_ITEM]
        assert _column(engine, "cancel_requests", "workflow_id") == sorted([f"agent/{A1}", f"agent/{NO_ITEM}"])
        # A queued item's stored payload still names the old key: it is decided under the new one.
        with engine.connect() as conn:
            payload = conn.execute(sa.select(sa.Table("deferred_items", sa.MetaData(), autoload_with=engine)
                                             .c.payload)).scalar_one()
        assert from_payload(payload)[1].work_key == new_a1
        ledger.require_current(empty_ledger_url)
    finally:
        engine.dispose()


def test_downgrade_strips_the_tenant_again(empty_ledger_url):
    engine = _old_ledger(empty_ledger_url)
    try:
        ledger.upgrade(empty_ledger_url)
        ledger.downgrade(empty_ledger_url, BEFORE)
        assert _column(engine, "work_items", "work_key") == sorted([A1, B2, NO_TENANT])
        assert _column(engine, "receipts", "work_key", "work_key IS NOT NULL") == sorted([A1, B2, NO_ITEM])
        assert _column(engine, "kills", "target") == sorted([A1, NO_ITEM, "acme"])
        assert _column(engine, "cancel_requests", "work_key") == sorted([A1, NO_ITEM])
    finally:
        engine.dispose()


def test_every_table_with_a_work_key_column_is_rewritten(empty_ledger_url):
    """Found from the schema, not from a list: a table another migration added before this one
    (cancel_requests, from the outcomes migration) cannot be forgotten."""
    ledger.upgrade(empty_ledger_url, BEFORE)
    engine = ledger.make_engine(empty_ledger_url)
    key = "github:acme/api#5:review"
    try:
        inspector = sa.inspect(engine)
        columns = {t: {c["name"] for c in inspector.get_columns(t)} for t in inspector.get_table_names()}
        keyed = sorted((t for t, cols in columns.items() if "work_key" in cols), key=lambda t: t != "work_items")
        assert {"work_items", "work_versions", "side_effects", "cancel_requests"} <= set(keyed)
        for table in keyed:  # the work item first: the tables without a tenant column take its tenant
            values = {"work_key": key} | ({"tenant": "acme"} if "tenant" in columns[table] else {})
            if table == "work_items":
                values |= {"target_id": "acme/api#5", "generation": 1, "status": "done"}
            _insert(engine, table, **values)
        ledger.upgrade(empty_ledger_url)
        assert {table: _column(engine, table, "work_key") for table in keyed} == {t: ["acme/" + key] for t in keyed}
    finally:
        engine.dispose()


def test_a_stored_tenant_name_that_cannot_head_a_key_stops_the_upgrade_before_any_write(empty_ledger_url):
    engine = _old_ledger(empty_ledger_url)
    try:
        _insert(engine, "work_items", work_key="github:o/r#4:review", tenant="Acme Corp", target_id="o/r#4",
                generation=1, status="done")
        with pytest.raises(Exception, match="'Acme Corp'"):
            ledger.upgrade(empty_ledger_url)
        assert ledger.current_revision(empty_ledger_url) == BEFORE
        assert "acme/" + A1 not in _column(engine, "work_items", "work_key")
    finally:
        engine.dispose()
