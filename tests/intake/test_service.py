"""The intake pipeline with its real adapters: ledger store, forge reader, Temporal admitter."""

from __future__ import annotations

import uuid
from contextlib import asynccontextmanager
from datetime import UTC, datetime

import httpx
import pytest
from sqlmodel import Session, select
from temporalio.client import Client

import ledger
from intake.decision import Outcome, Reason
from intake.envelope import Envelope, PullRequestRef, TriggerKind, WorkCandidate
from intake.forge_reader import ForgeTargetReader
from intake.identity import review_work_key
from intake.service import IntakeService
from intake.temporal_admitter import TemporalAdmitter
from ledger import Delivery, WorkVersion
from simulators import free_port
from sluicegate.forge_client import ForgeClient
from sluicegate.retry_after import JITTER_FRACTION
from tests.support.sims import FORGE_TOKEN, settings_for

PR44 = PullRequestRef("acme", "api", 44)


@pytest.fixture
def ledger_url(sims, tmp_path):
    sims.reset()
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    return url


@asynccontextmanager
async def service_for(sims, url: str, client: Client):
    settings = settings_for(sims, url)
    engine = ledger.make_engine(url)
    forge = ForgeClient(sims.forge.base_url, FORGE_TOKEN, timeout_seconds=2)
    try:
        yield IntakeService(ledger.SqlIntakeStore(engine), ForgeTargetReader(forge),
                            TemporalAdmitter(client, settings, search_attributes=False)), engine
    finally:
        await forge.aclose()
        engine.dispose()


def _event(version: str | None, delivery_id: str | None = None, kind=TriggerKind.EVENT):
    now = datetime.now(UTC)
    env = Envelope(id=delivery_id or str(uuid.uuid4()), source="github", type="pull_request.opened",
                   subject=PR44.target_id, time=now, received_at=now, trigger_kind=kind, tenant="acme")
    return env, WorkCandidate(review_work_key(PR44), PR44, version, "acme")


def _head(sims) -> str:
    r = httpx.get(f"{sims.forge.base_url}/repos/acme/api/pulls/44", headers={"Authorization": f"Bearer {FORGE_TOKEN}"})
    return r.raise_for_status().json()["head"]["sha"]


async def test_unreadable_source_defers_without_burning_the_delivery(sims, ledger_url, temporal_env):
    head = _head(sims)
    sims.forge_ctl("POST", "/faults", json={"method": "GET", "path": "/pulls/44$", "status": 503, "times": 1,
                                            "retry_after": 7})
    async with service_for(sims, ledger_url, temporal_env.client) as (service, engine):
        env, cand = _event(head)
        deferred = await service.submit(env, cand)
        assert (deferred.outcome, deferred.reason) == (Outcome.DEFER, Reason.SOURCE_UNAVAILABLE)
        # the source's Retry-After, passed on to the sender (plus the forge error mapper's jitter)
        assert 7 <= deferred.retry_after_seconds <= 7 * (1 + JITTER_FRACTION)
        with Session(engine) as s:
            assert s.get(Delivery, ("github", env.id)) is None
        again = await service.submit(env, cand)  # the sender redelivers the same delivery
        assert (again.outcome, again.reason) == (Outcome.ACCEPT, Reason.ADMITTED)
        assert again.workflow_id == f"agent/{cand.work_key}" and again.run_id


async def test_manual_trigger_without_version_takes_the_current_head(sims, ledger_url, temporal_env):
    async with service_for(sims, ledger_url, temporal_env.client) as (service, engine):
        env, cand = _event(None, kind=TriggerKind.MANUAL)
        decision = await service.submit(env, cand)
        assert decision.outcome == Outcome.ACCEPT and decision.input_version == _head(sims)


async def test_failed_admission_keeps_the_accepted_receipt_for_the_outbox(sims, ledger_url, temporal_env):
    # Temporal is unreachable (nothing listens on the port): signal-with-start fails.
    broken = await Client.connect(f"127.0.0.1:{free_port()}", lazy=True)
    async with service_for(sims, ledger_url, broken) as (service, engine):
        env, cand = _event(_head(sims))
        decision = await service.submit(env, cand)
        assert decision.outcome == Outcome.ACCEPT and decision.workflow_id is None
        with Session(engine) as s:
            [version] = s.exec(select(WorkVersion)).all()
            receipt = s.get(ledger.Receipt, decision.receipt_id)
        assert version.status == "accepted" and "admission pending" in receipt.message


async def test_event_age_and_authoritative_reread_are_distinct_reasons(sims, ledger_url, temporal_env):
    from dataclasses import replace
    from datetime import timedelta

    async with service_for(sims, ledger_url, temporal_env.client) as (service, engine):
        env, cand = _event(_head(sims))
        old = replace(env, time=env.received_at - timedelta(hours=2))
        too_old = await service.submit(old, cand, max_age_seconds=3600)
        assert (too_old.outcome, too_old.reason) == (Outcome.REJECT, Reason.TOO_OLD)
        stale_env, stale = _event("0" * 40)
        stale_decision = await service.submit(stale_env, stale, max_age_seconds=3600)
        assert stale_decision.reason == Reason.STALE_VERSION
        fresh_env, fresh = _event(_head(sims))
        assert (await service.submit(fresh_env, fresh, max_age_seconds=3600)).outcome == Outcome.ACCEPT
