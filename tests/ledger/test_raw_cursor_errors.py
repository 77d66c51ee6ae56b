"""The reads run on the driver's cursor (the early repeat look-up, the inline kill read) raise the
ledger's errors as SQLAlchemy's, so the webhook API's ledger-down handler answers 503 with
Retry-After, not 500 (``ledger/_raw_cursor.py``)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

import ledger
from intake.decision import Outcome
from intake.receipts import ReceiptDraft
from intake.envelope import TriggerKind
from ledger._kill_rows import covering
from ledger._kills import _any_covering
from ledger._repeats import find_repeat
from webhook_api._responses import LEDGER_DOWN


def _draft() -> ReceiptDraft:
    n = uuid.uuid4().hex
    return ReceiptDraft(Outcome.ACCEPT, "accepted", "", TriggerKind.EVENT, "github", datetime.now(UTC),
                        delivery_id=f"d-{n}", tenant="acme", work_key=f"wk-{n}", input_version="v1",
                        body_digest=f"sha256:{n}")


def test_a_sqlite_ledger_without_its_tables_raises_a_ledger_down_error(tmp_path):
    engine = ledger.make_engine(f"sqlite:///{tmp_path / 'not-migrated.sqlite'}")
    try:
        with engine.connect() as conn:
            with pytest.raises(OperationalError) as repeat:
                find_repeat(conn, _draft())
            with pytest.raises(OperationalError) as kill:
                _any_covering(conn, covering("wk", "acme"))
        for caught in (repeat.value, kill.value):
            assert isinstance(caught, LEDGER_DOWN) and "no such table" in str(caught.orig)
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_a_lost_postgresql_connection_raises_a_ledger_down_error(postgres_url):
    engine = ledger.make_engine(postgres_url)
    try:
        with engine.connect() as victim, engine.connect() as admin:
            pid = victim.execute(text("select pg_backend_pid()")).scalar_one()
            victim.commit()
            admin.execute(text("select pg_terminate_backend(:pid)"), {"pid": pid})
            admin.commit()
            with pytest.raises(OperationalError) as lost:
                find_repeat(victim, _draft())
            assert isinstance(lost.value, LEDGER_DOWN)
    finally:
        engine.dispose()
