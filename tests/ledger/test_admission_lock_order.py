"""PostgreSQL row-lock order between the API marking a version admitted and its run recording its end.

``SqlIntakeStore.mark_admitted`` (API process, right after the workflow started) and
``WorkStore.record_outcome`` (worker, when the run ends) update the same three rows. Taken in
opposite orders they deadlock, PostgreSQL aborts one, and when the aborted one is the API's, the
delivery — decided, committed and admitted — was answered ``503 ledger-unavailable``: seen in a
2-API scale run. Both now lock the version row first, then the receipt, then the work item.
"""

from __future__ import annotations

import threading
import uuid
from datetime import UTC, datetime

import pytest
from sqlalchemy import event, text
from sqlmodel import Session

import ledger
from intake.decision import Outcome, Reason
from intake.envelope import TriggerKind
from intake.receipts import ReceiptDraft
from ledger import Receipt, SqlIntakeStore, WorkItem, WorkStore, WorkVersion
from tests.support.pause_at_statement import PauseAtStatement, in_threads, started_and_blocked
from workflows.contracts import RunStatus

pytestmark = pytest.mark.postgres


def _draft(key: str, version: str) -> ReceiptDraft:
    return ReceiptDraft(outcome=Outcome.ACCEPT, reason=Reason.ADMITTED, message="admitting",
                        trigger_kind=TriggerKind.EVENT, source="github", received_at=datetime.now(UTC),
                        delivery_id=uuid.uuid4().hex, work_key=key, target_id="acme/api#1", input_version=version,
                        tenant="acme")


def test_marking_admitted_while_the_run_records_its_end_does_not_deadlock(postgres_url):
    engine = ledger.make_engine(postgres_url)
    try:
        key, version = f"acme/github:acme/api#{uuid.uuid4().int % 10**8}:review", uuid.uuid4().hex
        store = SqlIntakeStore(engine)
        decision = store.decide(_draft(key, version))
        assert decision.outcome == Outcome.ACCEPT
        run_thread: list[int] = []
        errors: dict[str, BaseException] = {}

        def run_ends() -> None:
            run_thread.append(threading.get_ident())
            try:
                WorkStore(engine).record_outcome(
                    work_key=key, input_version=version, generation=decision.generation, status=RunStatus.DONE,
                    run_id="run-1", result={"reason": "done"}, receipt_id=decision.receipt_id)
            except BaseException as exc:  # noqa: BLE001 - asserted below
                errors["run"] = exc

        def api_marks_admitted() -> None:
            try:
                store.mark_admitted(decision, f"agent/{key}", "run-1")
            except BaseException as exc:  # noqa: BLE001 - asserted below
                errors["api"] = exc

        # The run's transaction has updated its version row; hold it there until the API's
        # mark_admitted is waiting on a lock, then let it go on to the receipt.
        with PauseAtStatement(engine, lambda sql: sql.lstrip().startswith("UPDATE receipts"),
                              in_thread=in_threads(run_thread)) as held:
            run = threading.Thread(target=run_ends)
            run.start()
            held.wait_reached("the run never reached its receipt update")
            api = started_and_blocked(engine, api_marks_admitted, "mark_admitted never waited on the run's row lock")
            held.release()
            run.join(15)
            api.join(15)
        assert not run.is_alive() and not api.is_alive()
        assert errors == {}, {k: f"{type(v).__name__}: {v}" for k, v in errors.items()}
        with Session(engine) as s:
            assert s.get(WorkVersion, (key, version)).status == RunStatus.DONE
            assert s.get(WorkItem, key).status == RunStatus.DONE  # the run's end is not overwritten
            assert s.get(Receipt, decision.receipt_id).workflow_id == f"agent/{key}"
    finally:
        engine.dispose()


def test_an_accept_chosen_as_a_deadlock_victim_is_decided_again_not_answered_unavailable(postgres_url):
    """A deadlock (or serialization failure) rolls the whole decide transaction back: nothing was
    recorded, so the store decides again, as it does after losing a unique-key race, instead of
    letting the API answer a verified delivery 503. Here another transaction holds the work item
    while the accept waits on it, then claims the accept's delivery id: a cycle PostgreSQL breaks by
    aborting the accept (it waited first)."""
    engine = ledger.make_engine(postgres_url)
    other = engine.connect()
    try:
        key = f"acme/github:acme/api#{uuid.uuid4().int % 10**8}:review"
        store = SqlIntakeStore(engine)
        assert store.decide(_draft(key, uuid.uuid4().hex)).outcome == Outcome.ACCEPT  # the work item exists
        draft = _draft(key, uuid.uuid4().hex)
        tx = other.begin()
        other.execute(text("UPDATE work_items SET updated_at = now() WHERE work_key = :k"), {"k": key})
        result: dict[str, object] = {}

        def accept() -> None:
            try:
                result["decision"] = store.decide(draft)
            except BaseException as exc:  # noqa: BLE001 - asserted below
                result["error"] = exc

        worker = started_and_blocked(engine, accept, "the accept never waited on the work item")
        other.execute(text("INSERT INTO deliveries (source, delivery_id, received_at, receipt_id) "
                           "VALUES ('github', :d, now(), 'other') ON CONFLICT DO NOTHING"), {"d": draft.delivery_id})
        tx.rollback()  # the other transaction gives everything back; the accept may now go through
        worker.join(15)
        assert not worker.is_alive()
        assert "error" not in result, f"{type(result['error']).__name__}: {result['error']}"
        decision = result["decision"]
        assert decision.outcome == Outcome.ACCEPT, decision  # type: ignore[union-attr]
        with Session(engine) as s:
            assert s.get(WorkVersion, (key, draft.input_version)).status == "accepted"
    finally:
        other.close()
        engine.dispose()


def test_a_batch_of_marks_while_one_of_its_runs_records_its_end_does_not_deadlock(postgres_url):
    """The group commit (``mark_admitted_many``, ``intake/admitted_marks.py``) marks several versions in one
    transaction: versions first, then receipts, then work items. One of its runs ending meanwhile holds
    that key's version and waits for nothing the batch holds, so the batch waits and both go through."""
    engine = ledger.make_engine(postgres_url)
    try:
        run_id = uuid.uuid4().int % 10**8
        keys = [f"acme/github:acme/api#{run_id}{i}:review" for i in range(3)]
        store = SqlIntakeStore(engine)
        decisions = [store.decide(_draft(key, uuid.uuid4().hex)) for key in keys]
        ending = decisions[1]  # the middle one: the batch has already locked the first key's version
        run_thread: list[int] = []
        paused, resume = threading.Event(), threading.Event()

        @event.listens_for(engine, "before_cursor_execute")
        def _pause_the_run(conn, cursor, statement, params, context, executemany):
            if run_thread and threading.get_ident() == run_thread[0] and statement.lstrip().startswith(
                    "UPDATE receipts"):
                paused.set()
                resume.wait(10)

        errors: dict[str, BaseException] = {}

        def run_ends() -> None:
            run_thread.append(threading.get_ident())
            try:
                WorkStore(engine).record_outcome(
                    work_key=ending.work_key, input_version=ending.input_version, generation=ending.generation,
                    status=RunStatus.DONE, run_id="run-1", result={"reason": "done"}, receipt_id=ending.receipt_id)
            except BaseException as exc:  # noqa: BLE001 - asserted below
                errors["run"] = exc

        def api_marks_a_batch() -> None:
            try:
                store.mark_admitted_many([(d, f"agent/{d.work_key}", "run-1") for d in decisions])
            except BaseException as exc:  # noqa: BLE001 - asserted below
                errors["api"] = exc

        run = threading.Thread(target=run_ends)
        run.start()
        assert paused.wait(10), "the run never reached its receipt update"
        api = started_and_blocked(engine, api_marks_a_batch, "the batch never waited on the run's row lock")
        resume.set()
        run.join(15)
        api.join(15)
        assert not run.is_alive() and not api.is_alive()
        assert errors == {}, {k: f"{type(v).__name__}: {v}" for k, v in errors.items()}
        with Session(engine) as s:
            assert s.get(WorkVersion, (ending.work_key, ending.input_version)).status == RunStatus.DONE
            assert s.get(WorkItem, ending.work_key).status == RunStatus.DONE  # the run's end is kept
            for d in decisions:
                assert s.get(Receipt, d.receipt_id).workflow_id == f"agent/{d.work_key}"
                if d is not ending:
                    assert s.get(WorkVersion, (d.work_key, d.input_version)).status == "admitted"
    finally:
        engine.dispose()
