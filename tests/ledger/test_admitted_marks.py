"""Group commit of ``mark_admitted`` (``intake/admitted_marks.py`` over ``SqlIntakeStore.mark_admitted_many``).

Concurrent marks go in one transaction, none is lost, a failed batch is written again one mark at a
time, and a mark that never commits leaves its version ``accepted`` for the outbox relay: the crash
between the start and the mark strands nothing. Both ledgers.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime

import pytest
from sqlalchemy import event
from sqlmodel import Session

from intake.admitted_marks import AdmittedMarks
from intake.decision import IntakeDecision, Outcome, Reason
from intake.envelope import TriggerKind
from intake.outbox import relay
from intake.ports import Admission
from intake.receipts import ReceiptDraft
from ledger import Receipt, SqlIntakeStore, WorkItem, WorkStore, WorkVersion


def _accepted(store: SqlIntakeStore, key: str, version: str) -> IntakeDecision:
    decision = store.decide(ReceiptDraft(
        outcome=Outcome.ACCEPT, reason=Reason.ADMITTED, message="admitting", trigger_kind=TriggerKind.EVENT,
        source="github", received_at=datetime.now(UTC), delivery_id=uuid.uuid4().hex, work_key=key,
        target_id="acme/api#1", input_version=version, tenant="acme"))
    assert decision.outcome == Outcome.ACCEPT, decision
    return decision


def _keys(n: int) -> list[str]:
    run = uuid.uuid4().hex[:8]
    return [f"acme/github:acme/api-{run}#{i}:review" for i in range(n)]


def _count_commits(engine) -> list[int]:
    commits = [0]

    @event.listens_for(engine, "commit")
    def _counted(conn) -> None:
        commits[0] += 1

    return commits


def _assert_admitted(engine, decision: IntakeDecision, workflow_id: str) -> None:
    with Session(engine) as s:
        version = s.get(WorkVersion, (decision.work_key, decision.input_version))
        receipt = s.get(Receipt, decision.receipt_id)
        item = s.get(WorkItem, decision.work_key)
    assert (version.status, version.workflow_id, version.run_id) == ("admitted", workflow_id, f"run-{workflow_id}")
    assert (receipt.workflow_id, receipt.run_id) == (workflow_id, f"run-{workflow_id}")
    assert (item.status, item.workflow_id) == ("admitted", workflow_id)


async def test_concurrent_marks_commit_in_one_transaction_and_none_is_lost(engine):
    store = SqlIntakeStore(engine)
    decisions = [_accepted(store, key, uuid.uuid4().hex) for key in _keys(12)]
    marks = AdmittedMarks(store.mark_admitted_many)
    commits = _count_commits(engine)
    marked = await asyncio.gather(*(marks.mark(d, f"agent/{d.work_key}", f"run-agent/{d.work_key}")
                                    for d in decisions))
    assert commits == [1] and list(marks.batches) == [12]  # all twelve in one transaction
    for decision, answer in zip(decisions, marked, strict=True):
        assert (answer.receipt_id, answer.workflow_id) == (decision.receipt_id, f"agent/{decision.work_key}")
        _assert_admitted(engine, decision, f"agent/{decision.work_key}")


async def test_marks_arriving_during_a_write_go_in_the_next_transaction(engine):
    store = SqlIntakeStore(engine)
    decisions = [_accepted(store, key, uuid.uuid4().hex) for key in _keys(5)]
    marks = AdmittedMarks(store.mark_admitted_many)
    first = asyncio.ensure_future(marks.mark(decisions[0], "agent/first", "run-agent/first"))
    while not marks.batches:  # until the flusher took the first mark alone, into its write
        await asyncio.sleep(0)
    rest = [marks.mark(d, f"agent/{d.work_key}", f"run-agent/{d.work_key}") for d in decisions[1:]]
    await asyncio.gather(first, *rest)
    assert list(marks.batches) == [1, 4]
    _assert_admitted(engine, decisions[0], "agent/first")
    for decision in decisions[1:]:
        _assert_admitted(engine, decision, f"agent/{decision.work_key}")


async def test_a_failed_batch_is_written_again_one_mark_at_a_time(engine):
    store = SqlIntakeStore(engine)
    decisions = [_accepted(store, key, uuid.uuid4().hex) for key in _keys(4)]
    failures = [0]

    @event.listens_for(engine, "before_cursor_execute")
    def _fail_the_first_batch(conn, cursor, statement, params, context, executemany) -> None:
        if executemany and statement.lstrip().startswith("UPDATE work_versions") and failures[0] == 0:
            failures[0] += 1
            raise RuntimeError("the batch's transaction failed")

    marks = AdmittedMarks(store.mark_admitted_many)
    await asyncio.gather(*(marks.mark(d, f"agent/{d.work_key}", f"run-agent/{d.work_key}") for d in decisions))
    assert failures == [1] and list(marks.batches) == [4]
    for decision in decisions:
        _assert_admitted(engine, decision, f"agent/{decision.work_key}")


class _Starts:
    """The relay's admitter: records each start (the workflow's own dedupe is tests/workflows')."""

    def __init__(self) -> None:
        self.started: list[str] = []

    async def admit(self, admission: Admission) -> tuple[str, str | None]:
        workflow_id = f"agent/{admission.decision.work_key}"
        self.started.append(workflow_id)
        return workflow_id, f"run-{workflow_id}"


async def test_marks_never_committed_leave_their_versions_to_the_outbox_relay(engine):
    """The process dies (here: the transaction fails for good) after the runs started and before their
    marks' batch committed: every version stays ``accepted``, the relay finds and admits each of them."""
    store = SqlIntakeStore(engine)
    decisions = [_accepted(store, key, uuid.uuid4().hex) for key in _keys(3)]

    def _crash(conn, cursor, statement, params, context, executemany) -> None:
        if statement.lstrip().startswith("UPDATE work_versions"):
            raise RuntimeError("the API process died before the marks committed")

    event.listen(engine, "before_cursor_execute", _crash)
    marks = AdmittedMarks(store.mark_admitted_many)
    answers = await asyncio.gather(*(marks.mark(d, f"agent/{d.work_key}", None) for d in decisions),
                                   return_exceptions=True)
    assert all(isinstance(a, RuntimeError) for a in answers), answers  # each requester hears of it
    event.remove(engine, "before_cursor_execute", _crash)
    with Session(engine) as s:
        assert {s.get(WorkVersion, (d.work_key, d.input_version)).status for d in decisions} == {"accepted"}
    pending = {p.receipt_id: p for p in store.pending_admissions(older_than_seconds=0, limit=10_000)}
    assert {d.receipt_id for d in decisions} <= set(pending)
    for decision in decisions:
        assert pending[decision.receipt_id].generation == decision.generation
    starts = _Starts()
    report = await relay(store, [pending[d.receipt_id] for d in decisions], starts)
    assert sorted(report.admitted) == sorted(f"{d.work_key}@{d.input_version}" for d in decisions)
    for decision in decisions:
        _assert_admitted(engine, decision, f"agent/{decision.work_key}")


@pytest.mark.parametrize("order", ["forward", "reverse"])
def test_a_batch_records_every_mark_whatever_its_order(engine, order):
    """Two versions of one work key in one batch: only the current generation's work item is marked,
    and each version and receipt gets its own run whatever order the batch was given in."""
    store = SqlIntakeStore(engine)
    key = _keys(1)[0]
    older = _accepted(store, key, "a" * 40)
    newer = _accepted(store, key, "b" * 40)
    marks = [(older, "agent/old", "run-agent/old"), (newer, "agent/new", "run-agent/new")]
    marked = store.mark_admitted_many(marks if order == "forward" else marks[::-1])
    assert {m.receipt_id: m.workflow_id for m in marked} == {older.receipt_id: "agent/old",
                                                              newer.receipt_id: "agent/new"}
    with Session(engine) as s:
        assert s.get(WorkVersion, (key, older.input_version)).workflow_id == "agent/old"
        assert s.get(WorkVersion, (key, newer.input_version)).workflow_id == "agent/new"
        assert s.get(Receipt, older.receipt_id).run_id == "run-agent/old"
        assert s.get(WorkItem, key).workflow_id == "agent/new"  # the item is at the newer generation


def test_a_second_mark_of_one_admission_keeps_the_first_run_on_the_receipt_and_version(engine):
    """A repeat's or the relay's start of an admission already started (another replica's, a run that
    has ended since) may open a run its claim ends at once: its mark must not point the receipt away
    from the run that did the work, which the version keeps as well."""
    store = SqlIntakeStore(engine)
    decision = _accepted(store, _keys(1)[0], "c" * 40)
    store.mark_admitted(decision, f"agent/{decision.work_key}", "run-first")
    store.mark_admitted(decision, f"agent/{decision.work_key}", "run-second")
    with Session(engine) as s:
        assert s.get(Receipt, decision.receipt_id).run_id == "run-first"
        assert s.get(WorkVersion, (decision.work_key, decision.input_version)).run_id == "run-first"


def test_a_second_start_marked_after_the_first_run_ended_unmarked_leaves_the_receipt_on_the_first(engine):
    """The first run started, its mark never committed (the ledger restarted), and it recorded its end;
    then a repeat's or the relay's start opened a second run (refused by its claim) and marked it: the
    receipt names the run that did the work, as the version does."""
    store = SqlIntakeStore(engine)
    decision = _accepted(store, _keys(1)[0], "d" * 40)
    WorkStore(engine).record_outcome(work_key=decision.work_key, input_version=decision.input_version,
                                     generation=decision.generation, status="done", run_id="run-first",
                                     result={"reason": "done"})
    store.mark_admitted(decision, f"agent/{decision.work_key}", "run-second")
    with Session(engine) as s:
        version = s.get(WorkVersion, (decision.work_key, decision.input_version))
        assert (version.status, version.run_id) == ("done", "run-first")
        assert s.get(Receipt, decision.receipt_id).run_id == "run-first"
