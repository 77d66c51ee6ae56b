"""The intake pipeline with its real adapters: ledger store, forge reader, Temporal admitter."""

from __future__ import annotations

import asyncio
import uuid
from contextlib import asynccontextmanager
from datetime import UTC, datetime

import httpx
import pytest
from sqlmodel import Session, select
from temporalio.client import Client

import ledger
from intake.decision import Outcome, Reason
from intake.envelope import Envelope, PullRequestRef, TriggerKind
from intake.forge_reader import ForgeTargetReader
from intake.identity import review_candidate
from intake.service import IntakeService
from sluicegate.temporal.admitter import TemporalAdmitter
from intake.unread import UnreadPolicy
from ledger import DeferredItem, DeferredQueue, Delivery, WorkVersion
from ledger._sql import as_utc
from simulators import free_port
from sluicegate.services.intake import capacity_gate
from sluicegate.forge.client import ForgeClient
from sluicegate.forge.retry_after import JITTER_FRACTION
from sluicegate.config.tenancy import scope_rules
from tests.support.deferred import dispatch_until_decided, pass_when_due
from tests.support.sims import FORGE_TOKEN, settings_for

PR44 = PullRequestRef("acme", "api", 44)
UNREAD = UnreadPolicy(deadline_seconds=1.0, retry_seconds=0.2, max_seconds=2.0)
"""A short backoff, so the dispatcher's re-checks come within the test; the forge client's own
timeout (2 s) is longer than the freshness deadline, so a hang meets the deadline first."""


@pytest.fixture
def ledger_url(sims, tmp_path):
    sims.reset()
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    return url


@asynccontextmanager
async def service_for(sims, url: str, client: Client, admitter=None):
    """``admitter(real)``: wraps the Temporal admitter (a test's own port implementation), or None."""
    settings = settings_for(sims, url)
    engine = ledger.make_engine(url)
    forge = ForgeClient(sims.forge.base_url, FORGE_TOKEN, timeout_seconds=2)
    real = TemporalAdmitter(client, settings, search_attributes=False)
    try:
        yield IntakeService(ledger.SqlIntakeStore(engine), ForgeTargetReader(forge),
                            admitter(real) if admitter is not None else real,
                            capacity_gate(settings, engine), scope=scope_rules(settings), unread=UNREAD), engine
    finally:
        await forge.aclose()
        engine.dispose()


def _event(version: str | None, delivery_id: str | None = None, kind=TriggerKind.EVENT):
    now = datetime.now(UTC)
    env = Envelope(id=delivery_id or str(uuid.uuid4()), source="github", type="pull_request.opened",
                   subject=PR44.target_id, time=now, received_at=now, trigger_kind=kind, tenant="acme")
    return env, review_candidate("acme", PR44, version)


def _head(sims) -> str:
    r = httpx.get(f"{sims.forge.base_url}/repos/acme/api/pulls/44", headers={"Authorization": f"Bearer {FORGE_TOKEN}"})
    return r.raise_for_status().json()["head"]["sha"]


def _waiting(engine) -> list[DeferredItem]:
    with Session(engine) as s:
        return list(s.exec(select(DeferredItem).where(DeferredItem.status == "waiting")).all())


async def test_unreadable_source_queues_the_verified_delivery_and_the_dispatcher_admits_it(
        sims, ledger_url, temporal_env):
    head = _head(sims)
    sims.forge_ctl("POST", "/faults", json={"method": "GET", "path": "/pulls/44$", "status": 503, "times": 2,
                                            "retry_after": 1})
    async with service_for(sims, ledger_url, temporal_env.client) as (service, engine):
        env, cand = _event(head)
        deferred = await service.submit(env, cand)
        assert (deferred.outcome, deferred.reason) == (Outcome.DEFER, Reason.SOURCE_UNAVAILABLE)
        # the first wait: the backoff's base, never less than the source's own Retry-After (1 s; the
        # forge error mapper and the backoff each add their jitter)
        assert 1 <= deferred.retry_after_seconds <= max(1, UNREAD.retry_seconds) * (1 + JITTER_FRACTION) ** 2
        with Session(engine) as s:
            assert s.get(Delivery, ("github", env.id)) is not None  # recorded: verified means durable
        [item] = _waiting(engine)
        assert (item.tenant, item.work_key, item.input_version) == ("acme", cand.work_key, head)
        assert (item.blocked_on, item.receipt_id) == ("source-unavailable", deferred.receipt_id)
        again = await service.submit(env, cand)  # the sender redelivers the same delivery
        assert (again.outcome, again.reason) == (Outcome.REJECT, Reason.DUPLICATE_DELIVERY)
        other_env, _ = _event(head)  # another delivery of the same version, the forge still down
        other = await service.submit(other_env, cand)
        assert (other.outcome, other.reason) == (Outcome.REJECT, Reason.DUPLICATE_WORK)
        assert [i.id for i in _waiting(engine)] == [item.id]  # still one item
        ended, _ = await dispatch_until_decided(DeferredQueue(engine), service, item.id)
        assert ended.status == "admitted"
        with Session(engine) as s:
            version = s.get(WorkVersion, (cand.work_key, head))
            final = s.get(ledger.Receipt, ended.final_receipt_id)
        assert version.status == "admitted" and version.workflow_id == f"agent/{cand.work_key}"
        assert (final.outcome, final.reason, final.tenant, final.delivery_id) == ("accept", "admitted", "acme", env.id)


async def test_a_source_still_down_backs_off_exponentially_then_admits(sims, ledger_url, temporal_env):
    head = _head(sims)
    sims.forge_ctl("POST", "/faults", json={"method": "GET", "path": "/pulls/44$", "status": 502, "times": 3})
    async with service_for(sims, ledger_url, temporal_env.client) as (service, engine):
        env, cand = _event(head)
        assert (await service.submit(env, cand)).reason == Reason.SOURCE_UNAVAILABLE
        [item] = _waiting(engine)
        queue, waits = DeferredQueue(engine), []
        for _ in range(2):  # two re-checks meet the outage: each requeues, waiting twice as long
            report = await pass_when_due(queue, service, item.id)
            assert report.deferred == 1 and not report.admitted
            now = queue.get(item.id)
            waits.append((as_utc(now.next_attempt_at) - as_utc(now.updated_at)).total_seconds())
        assert UNREAD.retry_seconds * 2 <= waits[0] <= UNREAD.retry_seconds * 2 * (1 + JITTER_FRACTION) + 0.01
        assert UNREAD.retry_seconds * 4 <= waits[1] <= UNREAD.retry_seconds * 4 * (1 + JITTER_FRACTION) + 0.01
        assert queue.get(item.id).attempts == 2 and "502" in queue.get(item.id).last_error
        ended, _ = await dispatch_until_decided(queue, service, item.id)
        assert ended.status == "admitted"


async def test_a_forge_that_hangs_past_the_freshness_deadline_queues_the_delivery(sims, ledger_url, temporal_env):
    head = _head(sims)
    sims.forge_ctl("POST", "/faults", json={"method": "GET", "path": "/pulls/44$", "hang_seconds": 3, "times": 1})
    async with service_for(sims, ledger_url, temporal_env.client) as (service, engine):
        env, cand = _event(head)
        deferred = await service.submit(env, cand)
        assert (deferred.outcome, deferred.reason) == (Outcome.DEFER, Reason.FRESHNESS_DEADLINE)
        assert "1s freshness deadline" in deferred.message
        [item] = _waiting(engine)
        ended, _ = await dispatch_until_decided(DeferredQueue(engine), service, item.id)
        assert ended.status == "admitted"


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


def _version(engine) -> WorkVersion:
    with Session(engine) as s:
        [version] = s.exec(select(WorkVersion)).all()
        return version


async def _until(condition, seconds: float = 10.0) -> None:
    """Wait for ``condition()`` (polled); fail after ``seconds``."""
    async def polled() -> None:
        while not condition():
            await asyncio.sleep(0.01)
    await asyncio.wait_for(polled(), seconds)


async def _version_when(engine, ready, seconds: float = 10.0) -> WorkVersion:
    """The one version row once ``ready(row)`` holds (polled), or as it is after ``seconds``."""
    deadline = asyncio.get_running_loop().time() + seconds
    while not ready(version := _version(engine)) and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.02)
    return version


@pytest.mark.parametrize("repeat", ["same delivery", "another delivery", "same versionless trigger"])
async def test_a_repeat_starts_a_version_whose_start_failed(sims, ledger_url, temporal_env, repeat):
    # The accept committed and the start failed (Temporal unreachable); the sender repeats the
    # delivery (or another delivery of the version comes) once Temporal answers: the repeat starts it.
    # A trigger naming no version finds it through its original's receipt (the version row is keyed
    # by the version the forge gave).
    broken = await Client.connect(f"127.0.0.1:{free_port()}", lazy=True)
    env, cand = (_event(None, kind=TriggerKind.MANUAL) if repeat == "same versionless trigger"
                 else _event(_head(sims)))
    async with service_for(sims, ledger_url, broken) as (service, engine):
        first = await service.submit(env, cand)
        assert first.outcome == Outcome.ACCEPT and first.workflow_id is None
        assert _version(engine).status == "accepted"
    again_env = _event(cand.input_version)[0] if repeat == "another delivery" else env
    held = []
    async with service_for(sims, ledger_url, temporal_env.client,
                           admitter=lambda real: held.append(_HeldAdmitter(real)) or held[0]) as (service, engine):
        # answered while the start it set off is still held: the answer never waits for Temporal
        again = await asyncio.wait_for(service.submit(again_env, cand), 5)
        want = Reason.DUPLICATE_WORK if repeat == "another delivery" else Reason.DUPLICATE_DELIVERY
        assert (again.outcome, again.reason) == (Outcome.REJECT, want)
        await _until(lambda: held[0].starts > 0)
        assert _version(engine).status == "accepted" and service.starts.set_off == 1
        held[0].go.set()
        version = await _version_when(engine, lambda v: v.status != "accepted")
        assert version.status == "admitted" and version.workflow_id is not None
        handle = temporal_env.client.get_workflow_handle(version.workflow_id)
        assert (await handle.describe()).run_id == version.run_id
        with Session(engine) as s:
            receipt = s.get(ledger.Receipt, first.receipt_id)
        assert (receipt.workflow_id, receipt.run_id) == (version.workflow_id, version.run_id)


class _HeldAdmitter:
    """The Temporal admitter, its first start held until the test lets it go; counts the starts."""

    def __init__(self, real) -> None:
        self.real, self.starts, self.go = real, 0, asyncio.Event()

    async def admit(self, admission):
        self.starts += 1
        if self.starts == 1:
            await self.go.wait()
        return await self.real.admit(admission)


async def test_a_duplicate_during_the_start_does_not_start_the_version_again(sims, ledger_url, temporal_env):
    # Between the accept's commit and its mark the version is accepted with no run, as after a failed
    # start; a duplicate then is no repeat of a failure: this process is starting it.
    held = None

    def wrap(real):
        nonlocal held
        held = _HeldAdmitter(real)
        return held

    async with service_for(sims, ledger_url, temporal_env.client, admitter=wrap) as (service, engine):
        env, cand = _event(_head(sims))
        first = asyncio.create_task(service.submit(env, cand))
        await _until(lambda: held.starts > 0)
        assert _version(engine).status == "accepted"
        for again_env in (env, _event(cand.input_version)[0]):  # the same delivery, another one
            again = await service.submit(again_env, cand)
            assert again.outcome == Outcome.REJECT
        assert service.starts.set_off == 0  # neither duplicate set off a start of its own
        held.go.set()
        assert (await first).workflow_id is not None
        assert held.starts == 1
        assert _version(engine).status == "admitted"


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
