"""A triage event whose ``updated_at`` the API never shows cannot wait forever.

* ``future-event``: an ``issues`` delivery whose ``updated_at`` (its event time and its version) is
  more than ``intake.max_clock_skew_seconds`` after its receipt — a skewed clock, or year 9999 from
  someone holding the webhook secret — is refused before any forge read, instead of deferred as API
  lag and re-read every <= 300 s without end. The bound is against the receipt, not the source's
  version: a real edit of a long-idle issue is days ahead of the lagging read (checked below: admitted).
* ``source-lag-limit``: a version within the skew that the API still does not show
  ``intake.max_source_lag_seconds`` after the receipt is refused when re-decided, and its deferred
  item dropped; before that it is deferred (a real lag is seconds).

The forge simulator over HTTP, a real ledger, the real intake wiring (``task_intake``,
``capacity_gate``, ``unread_policy``); the service's clock is the one thing moved by hand.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

import ledger
from intake.decision import Outcome, Reason
from intake.envelope import Envelope, PullRequestRef, TriggerKind, WorkCandidate
from intake.service import IntakeService
from ledger import DeferredQueue, SqlIntakeStore
from sluicegate.forge.client import ForgeClient
from sluicegate.services.intake import capacity_gate, scope_rules, task_intake, unread_policy
from tasks.triage.target import canonical_version, parse_version, triage_candidate
from tests.support.sims import FORGE_TOKEN, settings_for, fresh_ledger


class NoAdmissions:
    async def admit(self, admission):
        raise AssertionError(f"nothing here is admitted: {admission.decision.work_key}")


@pytest.fixture
def ledger_url(sims, tmp_path) -> str:
    return fresh_ledger(sims, tmp_path)


def _issue(sims, name: str, number: int, updated_at: str) -> dict:
    return sims.forge_ctl("POST", f"/issues/acme/{name}/{number}", json={
        "title": "Crash on start", "body": "boom", "updated_at": updated_at}).json()


def _event(candidate: WorkCandidate, received_at: datetime) -> Envelope:
    """As ``tasks.triage.trigger.map_issues`` builds it: the event's time is the issue's ``updated_at``."""
    return Envelope(id=str(uuid.uuid4()), source="github", type="issues.edited", subject=candidate.target.target_id,
                    time=parse_version(candidate.input_version or ""), received_at=received_at,
                    trigger_kind=TriggerKind.EVENT, tenant="acme")


def _reads(sims) -> int:
    counts = sims.forge_ctl("GET", "/stats").json()["issue_reads"]
    return counts["json"] + counts["not_modified"]


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def _service(settings, engine, forge, clock: Clock) -> IntakeService:
    return IntakeService(SqlIntakeStore(engine), task_intake(settings, forge)["triage"].reader, NoAdmissions(),
                         capacity_gate(settings, engine), scope=scope_rules(settings), unread=unread_policy(settings),
                         tasks=task_intake(settings, forge), max_skew_seconds=settings.intake.max_clock_skew_seconds,
                         clock=clock)


@pytest.fixture
async def wired(sims, ledger_url):
    settings = settings_for(sims, ledger_url)
    engine = ledger.make_engine(ledger_url)
    forge = ForgeClient(sims.forge.base_url, FORGE_TOKEN, timeout_seconds=2)
    clock = Clock(datetime.now(UTC).replace(microsecond=0))
    try:
        yield settings, engine, _service(settings, engine, forge, clock), clock
    finally:
        await forge.aclose()
        engine.dispose()


@pytest.mark.parametrize("version", ["9999-12-31T23:59:59Z", "+ahead"])
async def test_an_updated_at_far_ahead_of_its_receipt_is_future_event_without_a_read(sims, wired, version):
    settings, engine, svc, clock = wired
    name = f"t{uuid.uuid4().hex[:8]}"
    _issue(sims, name, 7, "2026-11-29T10:00:00Z")
    if version == "+ahead":  # a skewed sender clock: just past the bound
        version = canonical_version(clock.now + timedelta(seconds=settings.intake.max_clock_skew_seconds + 60))
    cand = triage_candidate("acme", PullRequestRef("acme", name, 7), version)
    before = _reads(sims)
    d = await svc.submit(_event(cand, clock.now), cand)
    assert (d.outcome, d.reason) == (Outcome.REJECT, Reason.FUTURE_EVENT), d.message
    assert _reads(sims) == before  # decided before any forge read
    assert DeferredQueue(engine).waiting() == []


async def test_a_real_edit_of_a_long_idle_issue_is_days_ahead_of_the_lagging_read_and_still_waits(sims, wired):
    """The version is compared with its receipt, never with the source's: days ahead of the read is fine."""
    settings, engine, svc, clock = wired
    name = f"t{uuid.uuid4().hex[:8]}"
    _issue(sims, name, 7, canonical_version(clock.now - timedelta(days=40)))  # the API still shows the idle issue
    cand = triage_candidate("acme", PullRequestRef("acme", name, 7), canonical_version(clock.now))
    d = await svc.submit(_event(cand, clock.now), cand)
    assert (d.outcome, d.reason) == (Outcome.DEFER, Reason.SOURCE_UNAVAILABLE), d.message


async def test_a_version_the_api_never_shows_is_refused_after_the_lag_limit_and_its_item_dropped(sims, wired):
    settings, engine, svc, clock = wired
    name = f"t{uuid.uuid4().hex[:8]}"
    _issue(sims, name, 7, canonical_version(clock.now - timedelta(hours=1)))
    # within the skew (60 s ahead): a forged moment, or a real one the API never caught up with
    cand = triage_candidate("acme", PullRequestRef("acme", name, 7), canonical_version(clock.now + timedelta(seconds=60)))
    received = clock.now
    d = await svc.submit(_event(cand, received), cand)
    assert (d.outcome, d.reason) == (Outcome.DEFER, Reason.SOURCE_UNAVAILABLE), d.message
    queue = DeferredQueue(engine)
    [item] = queue.waiting()

    from intake.unread import Requeue

    limit = settings.intake.max_source_lag_seconds
    clock.now = received + timedelta(seconds=limit)  # at the limit: still a lag, still queued
    with pytest.raises(Requeue):
        await svc.resume(item.id, item.payload, item.receipt_id, item.attempts)

    clock.now = received + timedelta(seconds=limit + 1)
    reads = _reads(sims)
    d = await svc.resume(item.id, item.payload, item.receipt_id, item.attempts)
    assert (d.outcome, d.reason) == (Outcome.REJECT, Reason.SOURCE_LAG_LIMIT), d.message
    assert _reads(sims) == reads + 1  # it was read once more: the verdict is the source's, not the clock's alone
    assert queue.waiting() == [] and queue.get(item.id).status == "dropped"


async def test_an_item_queued_before_the_skew_bound_existed_is_dropped_when_re_decided(sims, wired):
    settings, engine, svc, clock = wired
    name = f"t{uuid.uuid4().hex[:8]}"
    _issue(sims, name, 7, "2026-11-29T10:00:00Z")
    cand = triage_candidate("acme", PullRequestRef("acme", name, 7), "9999-12-31T23:59:59Z")
    unbounded = _service(settings, engine, ForgeClient(sims.forge.base_url, FORGE_TOKEN, timeout_seconds=2),
                         clock)
    unbounded._max_skew = None  # as before this bound: the year-9999 event waits as API lag
    d = await unbounded.submit(_event(cand, clock.now), cand)
    assert (d.outcome, d.reason) == (Outcome.DEFER, Reason.SOURCE_UNAVAILABLE)
    queue = DeferredQueue(engine)
    [item] = queue.waiting()
    reads = _reads(sims)
    d = await svc.resume(item.id, item.payload, item.receipt_id, item.attempts)
    assert (d.outcome, d.reason) == (Outcome.REJECT, Reason.FUTURE_EVENT)
    assert _reads(sims) == reads and queue.get(item.id).status == "dropped"
