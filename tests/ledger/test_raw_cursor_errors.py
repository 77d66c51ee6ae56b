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


@pytest.mark.postgres
def test_a_lost_connection_is_invalidated_as_sqlalchemy_would(postgres_url):
    """The driver's "connection gone" invalidates the connection (``dialect.is_disconnect``): the error
    says so, and the pool hands out a working connection next, not the broken one."""
    from sqlmodel import Session

    from ledger._accept_sql import LOCK_VERSION

    engine = ledger.make_engine(postgres_url)
    try:
        with pytest.raises(OperationalError) as lost:
            with Session(engine) as s, s.begin():
                pid = s.execute(text("select pg_backend_pid()")).scalar_one()
                with engine.connect() as admin:
                    admin.execute(text("select pg_terminate_backend(:pid)"), {"pid": pid})
                    admin.commit()
                LOCK_VERSION.first(s, {"wk": "a", "ver": "b"})
        # The statement's own error, the connection marked gone (not a later rollback's "connection lost")
        assert type(lost.value.orig).__name__ == "AdminShutdown", repr(lost.value)
        assert lost.value.connection_invalidated and isinstance(lost.value, LEDGER_DOWN)
        with engine.connect() as again:
            assert again.execute(text("select pg_backend_pid()")).scalar_one() != pid
    finally:
        engine.dispose()


def test_cursor_listeners_are_called_as_sqlalchemy_calls_them(ledger_url):
    """A listener shaped like OpenTelemetry's SQLAlchemy instrumentation (``retval=True``, keeps its span
    on the execution context, sqlcommenter rewrites the statement) works on the accept's cursor path:
    the rewritten statement is the one run, and the after-listener sees the context the before-listener
    wrote on."""
    from sqlalchemy import event

    from ledger._intake_store import SqlIntakeStore
    from tests.ledger.test_accept_rows import _ctx, _draft as _accept_draft

    engine = ledger.make_engine(ledger_url)
    ran: list[str] = []
    ended: list[object] = []

    @event.listens_for(engine, "before_cursor_execute", retval=True)
    def _before(conn, cursor, statement, params, context, executemany):
        context._span = object()
        return "/* traced */ " + statement, params

    @event.listens_for(engine, "after_cursor_execute")
    def _after(conn, cursor, statement, params, context, executemany):
        ran.append(statement)
        ended.append(getattr(context, "_span", None))

    try:
        tenant = f"otel-{uuid.uuid4().hex[:6]}"
        store = SqlIntakeStore(engine)
        decided = store.decide(_accept_draft(tenant, f"{tenant}/github:{tenant}/r#1:review", "v1"), _ctx(tenant))
        assert decided.outcome == Outcome.ACCEPT
        store.mark_admitted(decided, "wf", "run")
        assert ran and all(s.startswith("/* traced */ ") for s in ran)
        assert None not in ended
    finally:
        engine.dispose()
