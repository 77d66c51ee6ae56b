"""Review finding: a run that ended before the API recorded its start leaves its version row without
a workflow id (``mark_admitted`` updates the version only while it is ``accepted``; ``record_outcome``
writes the run id, not the workflow id), so the dead letter of a run that failed at once, and the
console's run link, name no workflow."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlmodel import Session

from intake.decision import Outcome, Reason
from intake.envelope import TriggerKind
from intake.receipts import ReceiptDraft
from ledger import SqlIntakeStore, WorkStore, WorkVersion
from workflows.contracts import RunStatus


def test_a_run_that_ended_before_its_start_was_recorded_keeps_its_workflow_id(engine):
    key = f"acme/github:acme/api#{uuid.uuid4().int % 10**8}:review"
    store = SqlIntakeStore(engine)
    decision = store.decide(ReceiptDraft(
        outcome=Outcome.ACCEPT, reason=Reason.ADMITTED, message="admitting", trigger_kind=TriggerKind.EVENT,
        source="github", received_at=datetime.now(UTC), delivery_id=uuid.uuid4().hex, work_key=key,
        target_id="acme/api#1", input_version="v1", tenant="acme"))
    WorkStore(engine).record_outcome(work_key=key, input_version="v1", generation=decision.generation,
                                     status=RunStatus.FAILED, run_id="run-1", result={"reason": "failed"},
                                     receipt_id=decision.receipt_id)
    store.mark_admitted(decision, f"agent/{key}", "run-1")
    with Session(engine) as s:
        version = s.get(WorkVersion, (key, "v1"))
        assert version.status == RunStatus.FAILED
        assert version.workflow_id == f"agent/{key}"
