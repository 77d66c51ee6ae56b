"""Run outcomes in the ledger on SQLite and PostgreSQL: who cancelled (confirmed from the recorded
request, never from Temporal's text), which outcomes open a dead letter, the reconciler's
conditional write, open versions, and what a cancelled version blocks."""

from __future__ import annotations

import time
import uuid
from dataclasses import replace
from datetime import UTC, datetime

from sqlmodel import Session

from intake.decision import Outcome, Reason
from intake.envelope import TriggerKind
from intake.receipts import ReceiptDraft
from ledger import CancelRequests, DeadLetters, Receipt, SqlIntakeStore, WorkStore, WorkVersion
from workflows.cancellation import cancel_reason_text, attribute
from workflows.contracts import RunStatus
from workflows.stranded import OPEN_STATUSES


def _admitted(engine, trigger=TriggerKind.EVENT):
    key, version = f"acme/github:acme/api#{uuid.uuid4().int % 10**8}:review", uuid.uuid4().hex
    store = SqlIntakeStore(engine)
    decision = store.decide(_draft(key, version, trigger))
    store.mark_admitted(decision, f"agent/{key}", "run-1")
    return key, version, decision


def _draft(key: str, version: str, trigger=TriggerKind.EVENT) -> ReceiptDraft:
    return ReceiptDraft(outcome=Outcome.ACCEPT, reason=Reason.ADMITTED, message="admitting", trigger_kind=trigger,
                        source="github", received_at=datetime.now(UTC), delivery_id=uuid.uuid4().hex, work_key=key,
                        target_id="acme/api#1", input_version=version, tenant="acme")


def _record(engine, key, version, decision, status, reason, **kw) -> bool:
    result = {"reason": reason, "tenant": "acme", "source": "github", **kw.pop("result", {})}
    return WorkStore(engine, lambda t, s: f"owner-of-{t}").record_outcome(
        work_key=key, input_version=version, generation=decision.generation, status=status, run_id="run-1",
        result=result, receipt_id=decision.receipt_id, **kw)


def _version(engine, key, version) -> WorkVersion:
    with Session(engine) as s:
        return s.get(WorkVersion, (key, version))


def _letters(engine, key) -> list:
    return [d for d in DeadLetters(engine).list(status=None, limit=1000) if d.work_key == key]


def test_a_recorded_cancel_request_names_who_and_why(engine):
    key, version, decision = _admitted(engine)
    request = CancelRequests(engine).record(key, f"agent/{key}", "alice", "wrong pull request")
    who = attribute(cancel_reason_text(request.id, "alice", "wrong pull request"))
    assert _record(engine, key, version, decision, RunStatus.CANCELLED, who.outcome_reason,
                   result={"cancel_request": who.request_id})
    row = _version(engine, key, version)
    assert row.status == "cancelled" and row.result["cancelled_by"] == "alice"
    assert row.result["reason"] == "cancelled by alice: wrong pull request"
    assert _letters(engine, key) == []  # a person decided: nobody needs to act
    with Session(engine) as s:
        assert s.get(Receipt, decision.receipt_id).message.endswith("; run cancelled by alice: wrong pull request")


def test_a_request_id_for_another_work_key_is_not_believed(engine):
    key, version, decision = _admitted(engine)
    other = CancelRequests(engine).record("acme/github:acme/web#1:review", "agent/x", "carol", "elsewhere")
    claimed = attribute(cancel_reason_text(other.id, "carol", "elsewhere"))
    _record(engine, key, version, decision, RunStatus.CANCELLED, claimed.outcome_reason,
            result={"cancel_request": claimed.request_id})
    row = _version(engine, key, version)
    assert row.result["cancelled_by"] == "temporal"
    assert row.result["reason"] == "cancelled by temporal: unconfirmed cancel request (cancelled by carol: elsewhere)"


def test_terminated_and_timed_out_open_a_dead_letter_for_the_owner(engine):
    for status in (RunStatus.TERMINATED, RunStatus.TIMED_OUT):
        key, version, decision = _admitted(engine)
        assert _record(engine, key, version, decision, status, f"{status}: drill", only_from=OPEN_STATUSES)
        [letter] = _letters(engine, key)
        assert (letter.owner, letter.reason, letter.status) == ("owner-of-acme", f"{status}: drill", "open")


def test_the_reconciler_writes_nothing_once_the_run_recorded_its_outcome(engine):
    key, version, decision = _admitted(engine)
    assert _record(engine, key, version, decision, RunStatus.DONE, "completed")
    assert not _record(engine, key, version, decision, RunStatus.TERMINATED, "terminated: late", only_from=OPEN_STATUSES)
    assert _version(engine, key, version).status == "done" and _letters(engine, key) == []
    with Session(engine) as s:
        assert "terminated" not in s.get(Receipt, decision.receipt_id).message


def test_open_versions_are_admitted_ones_past_the_grace_period(engine):
    key, version, decision = _admitted(engine)
    pending_key = f"acme/github:acme/api#{uuid.uuid4().int % 10**8}:review"
    SqlIntakeStore(engine).decide(_draft(pending_key, "v1"))  # accepted: the outbox relay's
    store = WorkStore(engine)
    assert key not in {v.work_key for v in store.open_versions(OPEN_STATUSES, 3600, 10_000)}  # too young
    time.sleep(0.05)
    found = {v.work_key: v for v in store.open_versions(OPEN_STATUSES, 0, 10_000)}
    assert pending_key not in found
    mine = found[key]
    assert (mine.input_version, mine.generation, mine.run_id, mine.tenant, mine.source) == (
        version, decision.generation, "run-1", "acme", "github")


def test_cancelled_version_blocks_automatic_triggers_but_not_a_manual_one(engine):
    key, version, decision = _admitted(engine)
    _record(engine, key, version, decision, RunStatus.CANCELLED, "cancelled by temporal: x")
    store = SqlIntakeStore(engine)
    for trigger in (TriggerKind.EVENT, TriggerKind.SCHEDULE, TriggerKind.GOAL):
        again = store.decide(_draft(key, version, trigger))
        assert (again.outcome, again.reason) == (Outcome.REJECT, Reason.DUPLICATE_WORK), trigger
        assert "only a manual trigger runs it again" in again.message
    manual = store.decide(replace(_draft(key, version, TriggerKind.MANUAL), actor="alice"))
    assert manual.outcome == Outcome.ACCEPT and manual.generation == decision.generation + 1


def test_a_cancel_request_records_its_fate(engine):
    requests = CancelRequests(engine)
    row = requests.record("acme/github:acme/api#7:review", "agent/acme/github:acme/api#7:review", "alice", "x" * 600)
    requests.mark(row.id, "no-run", None, "no workflow agent/acme/github:acme/api#7:review")
    [stored] = [r for r in requests.for_work_key("acme/github:acme/api#7:review") if r.id == row.id]
    assert (stored.status, stored.error, len(stored.reason)) == ("no-run", "no workflow agent/acme/github:acme/api#7:review",
                                                                 500)


def test_a_superseded_generations_failure_opens_no_dead_letter(engine):
    """Generation 1 is killed, generation 2 re-admits the same version, then generation 1's late
    ``failed`` arrives: it is not recorded (a newer generation owns the version), and nobody is paged."""
    key, version, first = _admitted(engine)
    assert _record(engine, key, version, first, RunStatus.KILLED, "killed by alice: oops", only_from=OPEN_STATUSES)
    second = SqlIntakeStore(engine).decide(_draft(key, version))
    assert second.outcome == Outcome.ACCEPT and second.generation > first.generation
    assert not _record(engine, key, version, first, RunStatus.FAILED, "failed: late, superseded")
    assert _letters(engine, key) == []
    assert (_version(engine, key, version).generation, _version(engine, key, version).status) == (
        second.generation, "accepted")
    assert _record(engine, key, version, second, RunStatus.FAILED, "failed: its own")  # the owner's end still pages
    assert [letter.generation for letter in _letters(engine, key)] == [second.generation]
