"""Re-admission of an ended version: one admission per race, and the readmission limit."""

from __future__ import annotations

import threading
from dataclasses import replace as _replace
import uuid
from datetime import UTC, datetime

import pytest
from sqlalchemy import update
from sqlmodel import Session

import ledger
from intake.decision import Outcome, Reason
from intake.envelope import TriggerKind
from intake.receipts import ReceiptDraft
from ledger import SqlIntakeStore
from ledger._models import WorkVersion
from tests.ledger.test_one_waiting import _until_blocked


def _key() -> tuple[str, str]:
    tenant = f"r9-{uuid.uuid4().hex[:8]}"
    return tenant, f"{tenant}/github:{tenant}/api#1:review"


def _draft(tenant: str, key: str, version: str, outcome=Outcome.ACCEPT, kind=TriggerKind.MANUAL) -> ReceiptDraft:
    reason = Reason.SOURCE_UNAVAILABLE if outcome == Outcome.DEFER else Reason.ADMITTED
    return ReceiptDraft(outcome=outcome, reason=reason, message="m", trigger_kind=kind, source="manual",
                        received_at=datetime.now(UTC), delivery_id=str(uuid.uuid4()), tenant=tenant,
                        work_key=key, target_id=key, input_version=version, retry_after_seconds=20.0)


@pytest.mark.postgres
def test_two_replicas_readmitting_one_ended_version_at_once_admit_it_once(postgres_url):
    """Replica A has re-admitted a 'failed' version but not committed; replica B's re-admission
    of it waits on A's row lock and then sees 'accepted': a duplicate, not a second admission
    (without the lock both admitted, and the readmission count was bumped once)."""
    engine = ledger.make_engine(postgres_url)
    tenant, key = _key()
    store = SqlIntakeStore(engine, max_readmissions=3)
    try:
        assert store.decide(_draft(tenant, key, "v1")).outcome == Outcome.ACCEPT
        with Session(engine) as s, s.begin():
            s.execute(update(WorkVersion).where(WorkVersion.work_key == key).values(status="failed"))
        results = []
        with Session(engine) as a:  # replica A inside SqlIntakeStore._decide_once, not yet committed
            a.begin()
            draft_a = _draft(tenant, key, "v1")
            existing = a.get(WorkVersion, (key, "v1"))
            assert SqlIntakeStore._blocking_reason(a, draft_a, existing) is None
            SqlIntakeStore._admit_version(a, draft_a, "rcpt-a", existing)
            racer = threading.Thread(target=lambda: results.append(store.decide(_draft(tenant, key, "v1"))))
            racer.start()
            _until_blocked(engine, racer)  # replica B waits on A's work_items row lock
            a.commit()
        racer.join(timeout=30)
        [b] = results
        with Session(engine) as s:
            row = s.get(WorkVersion, (key, "v1"))
        assert (b.outcome, b.reason) == (Outcome.REJECT, Reason.DUPLICATE_WORK), (b.outcome, b.reason, row.readmissions)
    finally:
        engine.dispose()


def test_readmissions_of_a_killed_version_do_not_count_toward_the_limit(engine):
    """Intake consults no kill and a 'killed' version does not block, so automatic triggers of the
    head during a kill admit it again (each run ends 'killed'). Those re-admissions do not count:
    after the unkill an admin's forced re-run is admitted, not refused 'readmission-limit'."""
    tenant, key = _key()
    store = SqlIntakeStore(engine, max_readmissions=3)

    def end(status: str) -> None:
        with Session(engine) as s, s.begin():
            s.execute(update(WorkVersion).where(WorkVersion.work_key == key).values(status=status))

    assert store.decide(_draft(tenant, key, "v1", kind=TriggerKind.EVENT)).outcome == Outcome.ACCEPT
    end("killed")
    for _ in range(3):  # e.g. ready_for_review / reopened / a scan during the kill
        assert store.decide(_draft(tenant, key, "v1", kind=TriggerKind.EVENT)).outcome == Outcome.ACCEPT
        end("killed")
    # unkill; an admin forces the review of the current head
    forced = store.decide(_replace(_draft(tenant, key, "v1"), override="rerun-done: after the unkill"))
    assert forced.outcome == Outcome.ACCEPT, (forced.reason, forced.message)
