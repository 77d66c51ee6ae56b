"""``future-event`` claims nothing: when OUR clock is the wrong one (it runs slow, so every event
looks ahead of its receipt), every delivery is refused ``future-event``; once the clock is fixed a
GitHub "Redeliver" of the same delivery (same id, same signed body) is decided afresh, not answered
``duplicate-delivery`` (the deliveries would be lost). Each refusal keeps its receipt.

Real parts: the intake service with the SQL ledger (both backends), the forge simulator over HTTP.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

import ledger
from intake.envelope import Envelope, PullRequestRef, TriggerKind
from intake.forge_reader import ForgeTargetReader
from intake.identity import review_candidate, workflow_id_for
from intake.ports import Admission
from intake.scope import ScopeRules
from intake.service import IntakeService
from ledger import SqlIntakeStore
from ledger._queries import ReceiptFilter, list_receipts
from sluicegate.forge.client import ForgeClient
from tests.support.sims import FORGE_TOKEN


class StartsNothing:
    async def admit(self, admission: Admission) -> tuple[str, str | None]:
        return workflow_id_for(admission.decision.work_key), None


@pytest.fixture
async def parts(empty_ledger_url, sims):
    ledger.upgrade(empty_ledger_url)
    engine = ledger.make_engine(empty_ledger_url)
    forge = ForgeClient(sims.forge.base_url, FORGE_TOKEN, timeout_seconds=5)
    yield engine, IntakeService(SqlIntakeStore(engine), ForgeTargetReader(forge), StartsNothing(),
                                scope=ScopeRules.everything(), max_skew_seconds=300.0)
    await forge.aclose()
    engine.dispose()


async def test_a_future_event_refused_under_a_slow_clock_is_decided_afresh_when_redelivered(parts, sims):
    engine, service = parts
    tenant = f"f{uuid.uuid4().hex[:6]}"
    ref = PullRequestRef(tenant, f"r{uuid.uuid4().hex[:8]}", 1)
    sims.forge_ctl("POST", f"/pulls/{ref.owner}/{ref.repo}/1", json={"head_sha": uuid.uuid4().hex + "0" * 8})
    event_time = datetime.now(UTC)
    slow_clock = event_time - timedelta(hours=1)  # our receipt time, an hour behind the sender's
    delivery = Envelope(id=str(uuid.uuid4()), source="github", type="pull_request.opened", subject=ref.target_id,
                        time=event_time, received_at=slow_clock, trigger_kind=TriggerKind.EVENT, tenant=tenant,
                        body_digest=uuid.uuid4().hex)

    refused = await service.submit(delivery, review_candidate(tenant, ref, None))
    assert (refused.outcome, refused.reason) == ("reject", "future-event"), refused.message

    # NTP fixed; the operator presses "Redeliver": same id, same body, received at a sane time.
    redelivered = replace(delivery, received_at=datetime.now(UTC))
    admitted = await service.submit(redelivered, review_candidate(tenant, ref, None))
    assert (admitted.outcome, admitted.reason) == ("accept", "admitted"), admitted.message

    receipts = list_receipts(engine, ReceiptFilter(work_key=refused.work_key))
    assert sorted(r.reason for r in receipts) == ["admitted", "future-event"]
    # And now the delivery id is claimed: a third copy is a duplicate.
    again = await service.submit(redelivered, review_candidate(tenant, ref, None))
    assert again.reason == "duplicate-delivery"
