"""A duplicate of a version another intake of this process is reading and deciding waits for that
decision, then asks the ledger once: taken → ``duplicate-work`` with no forge read of its own and no
ledger polling; the first failing (source unavailable) or cancelled (its client went away) releases it
to decide on its own. Real forge simulator, both ledgers; the first intake is held at a gate (its
forge read, or its ledger decision) so the duplicate arrives while it is in flight."""

from __future__ import annotations

import asyncio
import hashlib
import threading
import uuid
from datetime import UTC, datetime
from typing import Callable

import pytest

from intake.admissions_in_flight import AdmissionsInFlight
from intake.decision import Outcome, Reason
from intake.envelope import Envelope, PullRequestRef, TriggerKind
from intake.identity import review_candidate
from intake.ports import Admission
from intake.scope import ScopeRules
from intake.service import IntakeService
from intake.shared_reads import SharedReads
from ledger import SqlIntakeStore
from tests.support.forge_targets import GatedReader, forge_reads, seeded_target

V1 = hashlib.sha1(b"in flight v1").hexdigest()


class GatedStore(SqlIntakeStore):
    """The real ledger; an accept waits at a gate (in its worker thread) before it is decided."""

    def __init__(self, engine) -> None:
        super().__init__(engine)
        self.gate = threading.Event()
        self.accepting = threading.Event()

    def decide(self, draft, capacity=None):
        if draft.outcome == Outcome.ACCEPT:
            self.accepting.set()
            self.gate.wait(30)
        return super().decide(draft, capacity)


class Admitted:
    def __init__(self) -> None:
        self.keys: list[str] = []

    async def admit(self, admission: Admission) -> tuple[str, str | None]:
        self.keys.append(admission.decision.work_key)
        return f"wf-{uuid.uuid4().hex}", uuid.uuid4().hex


def _delivery(ref: PullRequestRef, version: str = V1):
    now = datetime.now(UTC)
    env = Envelope(id=str(uuid.uuid4()), source="github", type="pull_request.synchronize", subject=ref.target_id,
                   time=now, received_at=now, trigger_kind=TriggerKind.EVENT, tenant="acme")
    return env, review_candidate("acme", ref, version)


def _waiting(service: IntakeService) -> int:
    """Duplicates waiting for an admission in flight (0 where there is no such registry: the tests
    then fail on their assertions instead of hanging)."""
    registry = getattr(service, "admissions_in_flight", None)
    return registry.waiting if registry is not None else 0


async def _until(condition: Callable[[], bool]) -> None:
    """Let the intakes run until ``condition`` holds (a state, not a duration: fails if it never does)."""
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the intakes never reached the expected state")


@pytest.fixture
async def forge(sims):
    async with seeded_target(sims, "inflight", V1) as target:
        yield target


async def test_a_duplicate_waits_for_the_first_decision_and_reads_nothing(engine, sims, forge):
    ref, real = forge
    reader, admitted = GatedReader(real), Admitted()
    service = IntakeService(SqlIntakeStore(engine), reader, admitted, scope=ScopeRules.everything())
    first = asyncio.ensure_future(service.submit(*_delivery(ref)))
    await _until(lambda: reader.calls == 1)  # the first intake is reading, held at the gate
    second = asyncio.ensure_future(service.submit(*_delivery(ref)))
    await _until(lambda: _waiting(service) == 1 or reader.calls == 2)
    reader.gate.set()
    accepted, duplicate = await asyncio.gather(first, second)
    assert (accepted.outcome, accepted.reason) == (Outcome.ACCEPT, Reason.ADMITTED)
    assert (duplicate.outcome, duplicate.reason) == (Outcome.REJECT, Reason.DUPLICATE_WORK)
    assert accepted.receipt_id in duplicate.message and "without a forge read" in duplicate.message
    assert (reader.calls, forge_reads(sims, ref), admitted.keys) == (1, 1, [accepted.work_key])
    registry = service.admissions_in_flight
    assert (registry.waited, registry.timed_out, len(registry)) == (1, 0, 0)  # nothing left behind


async def test_a_duplicate_waits_instead_of_polling_the_ledger_while_the_first_commits(engine, sims, forge):
    """The kept "fresh" snapshot case: the first intake's read is done, its accept not committed yet.
    The duplicate awaits that commit: no ledger re-checks with sleeps (``rechecks``), no second read."""
    ref, real = forge
    shared = SharedReads(real, snapshot_seconds=30)
    store, admitted = GatedStore(engine), Admitted()
    service = IntakeService(store, shared, admitted, scope=ScopeRules.everything())
    try:
        first = asyncio.ensure_future(service.submit(*_delivery(ref)))
        await _until(store.accepting.is_set)  # read, kept "fresh", its accept waiting at the gate
        second = asyncio.ensure_future(service.submit(*_delivery(ref)))
        await _until(lambda: _waiting(service) == 1 or shared.started == 2)
        store.gate.set()
        accepted, duplicate = await asyncio.gather(first, second)
    finally:
        store.gate.set()
    assert (accepted.outcome, duplicate.reason) == (Outcome.ACCEPT, Reason.DUPLICATE_WORK)
    assert (shared.started, forge_reads(sims, ref)) == (1, 1)
    assert shared.rechecks == 0
    assert admitted.keys == [accepted.work_key]


async def test_a_first_intake_that_cannot_read_releases_its_duplicate_to_read_on_its_own(engine, sims, forge):
    ref, real = forge
    reader, admitted = GatedReader(real), Admitted()
    service = IntakeService(SqlIntakeStore(engine), reader, admitted, scope=ScopeRules.everything())
    sims.forge_ctl("POST", "/faults", json={"method": "GET", "path": f"/{ref.repo}/pulls/1$", "status": 503,
                                            "times": 1})
    first = asyncio.ensure_future(service.submit(*_delivery(ref)))
    await _until(lambda: reader.calls == 1)
    second = asyncio.ensure_future(service.submit(*_delivery(ref)))
    await _until(lambda: _waiting(service) == 1)
    reader.gate.set()
    deferred, accepted = await asyncio.gather(first, second)
    assert (deferred.outcome, deferred.reason) == (Outcome.DEFER, Reason.SOURCE_UNAVAILABLE)
    assert (accepted.outcome, accepted.reason) == (Outcome.ACCEPT, Reason.ADMITTED)  # its own read
    assert (reader.calls, admitted.keys) == (2, [accepted.work_key])
    assert len(service.admissions_in_flight) == 0


async def test_a_cancelled_first_intake_releases_its_duplicate(engine, sims, forge):
    """The first intake's client went away mid-read: its ``finally`` releases the waiting duplicate,
    which reads and decides on its own."""
    ref, real = forge
    reader, admitted = GatedReader(real), Admitted()
    service = IntakeService(SqlIntakeStore(engine), reader, admitted, scope=ScopeRules.everything())
    first = asyncio.ensure_future(service.submit(*_delivery(ref)))
    await _until(lambda: reader.calls == 1)
    second = asyncio.ensure_future(service.submit(*_delivery(ref)))
    await _until(lambda: _waiting(service) == 1)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    await _until(lambda: reader.calls == 2)  # released: the duplicate reads for itself
    reader.gate.set()
    accepted = await second
    assert (accepted.outcome, accepted.reason) == (Outcome.ACCEPT, Reason.ADMITTED)
    assert admitted.keys == [accepted.work_key]
    registry = service.admissions_in_flight
    assert (registry.timed_out, len(registry)) == (0, 0)


async def test_the_registry_holds_one_owner_per_version_and_a_wait_that_gives_up_says_so():
    """Pure registry rules: a second ``enter`` of a held version gets a no-op handle; no version, no
    flight; a wait for an owner that never releases gives up (then the caller polls as before)."""
    registry = AdmissionsInFlight(wait_seconds=0.01)
    owner = registry.enter("review", "acme", "k", V1)
    other = registry.enter("review", "acme", "k", V1)
    assert registry.enter("review", "acme", "k", None) is other  # the shared no-op handle
    assert (len(registry), registry.held("review", "acme", "k", V1), registry.held("review", "beta", "k", V1)) == \
        (1, True, False)
    other.release()  # a non-owner's release leaves the owner's entry
    assert await registry.wait("review", "acme", "k", V1) is False and registry.timed_out == 1
    assert await registry.wait("review", "acme", "k", "other") is None  # nothing known: no wait
    owner.release()
    owner.release()  # idempotent
    assert len(registry) == 0 and await registry.wait("review", "acme", "k", V1) is None


async def test_an_exact_redelivery_that_waited_is_answered_as_a_repeat_without_a_read(engine, sims, forge):
    """The same delivery id sent again while its original is being read and decided: after the wait
    it is answered with the original's decision (``seen``), not read and decided again (a review found
    the wait made it miss the shared read and start a second one)."""
    ref, real = forge
    reader, admitted = GatedReader(real), Admitted()
    service = IntakeService(SqlIntakeStore(engine), reader, admitted, scope=ScopeRules.everything())
    envelope, candidate = _delivery(ref)
    first = asyncio.ensure_future(service.submit(envelope, candidate))
    await _until(lambda: reader.calls == 1)
    again = asyncio.ensure_future(service.submit(envelope, candidate))
    await _until(lambda: _waiting(service) == 1 or reader.calls == 2)
    reader.gate.set()
    accepted, repeat = await asyncio.gather(first, again)
    assert (accepted.outcome, accepted.reason) == (Outcome.ACCEPT, Reason.ADMITTED)
    assert repeat.receipt_id == accepted.receipt_id  # the original's own receipt: a repeat
    assert (reader.calls, forge_reads(sims, ref), admitted.keys) == (1, 1, [accepted.work_key])
