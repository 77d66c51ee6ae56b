"""Triage through the real intake pipeline: the issue re-read from the forge simulator over HTTP, the
decision in a real ledger, the run admitted on a real Temporal server.

Freshness for timestamps: the issue's current ``updated_at`` admits; an older one is ``stale-version``;
a newer one (the API lags behind the event) is deferred, never lost; a closed issue is
``target-closed``; a pull request's number is ``target-not-found``. A disabled task is ``unknown-task``
before any read. A pull request's and an issue's read of one number never share a snapshot.
"""

from __future__ import annotations

import uuid
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import AsyncIterator

import pytest

import ledger
from intake.decision import Outcome, Reason
from intake.envelope import Envelope, PullRequestRef, TriggerKind, WorkCandidate
from intake.identity import review_candidate
from intake.service import IntakeService
from sluicegate.config.settings import Settings
from sluicegate.config.tasks import TasksConfig
from sluicegate.forge.client import ForgeClient
from sluicegate.services.intake import intake_service
from sluicegate.temporal.admitter import TemporalAdmitter
from tasks.triage.target import triage_candidate
from tests.support.sims import FORGE_TOKEN, settings_for, fresh_ledger


@pytest.fixture
def ledger_url(sims, tmp_path) -> str:
    return fresh_ledger(sims, tmp_path)


@asynccontextmanager
async def service(sims, url: str, client, settings: Settings | None = None) -> AsyncIterator[IntakeService]:
    settings = settings or settings_for(sims, url)
    engine = ledger.make_engine(url)
    forge = ForgeClient(sims.forge.base_url, FORGE_TOKEN, timeout_seconds=2)
    try:
        yield intake_service(settings, engine, forge, TemporalAdmitter(client, settings, search_attributes=False))
    finally:
        await forge.aclose()
        engine.dispose()


def repo() -> str:
    return f"t{uuid.uuid4().hex[:8]}"


def issue(sims, name: str, number: int, **fields) -> dict:
    return sims.forge_ctl("POST", f"/issues/acme/{name}/{number}", json={"title": "Crash on start", "body": "boom",
                                                                         **fields}).json()


def event(candidate: WorkCandidate, type_: str = "issues.opened") -> Envelope:
    now = datetime.now(UTC)
    return Envelope(id=str(uuid.uuid4()), source="github", type=type_, subject=candidate.target.target_id,
                    time=now, received_at=now, trigger_kind=TriggerKind.EVENT, tenant="acme")


def reads(sims, kind: str) -> dict:
    return sims.forge_ctl("GET", "/stats").json()[kind]


async def decide(svc: IntakeService, cand: WorkCandidate):
    return await svc.submit(event(cand), cand)


async def test_the_current_updated_at_admits_a_triage_run(sims, ledger_url, temporal_env):
    name = repo()
    stored = issue(sims, name, 7, updated_at="2026-11-29T10:00:00Z")
    async with service(sims, ledger_url, temporal_env.client) as svc:
        d = await decide(svc, triage_candidate("acme", PullRequestRef("acme", name, 7), stored["updated_at"]))
    assert (d.outcome, d.reason) == (Outcome.ACCEPT, Reason.ADMITTED)
    assert d.work_key == f"acme/github:acme/{name}#7:triage" and d.input_version == "2026-11-29T10:00:00Z"
    assert d.workflow_id == f"agent/{d.work_key}"


@pytest.mark.parametrize("version, fields, outcome, reason", [
    ("2026-11-29T09:59:59Z", {}, Outcome.REJECT, Reason.STALE_VERSION),      # edited since the event
    ("2026-11-29T10:00:05Z", {}, Outcome.DEFER, Reason.SOURCE_UNAVAILABLE),  # the API lags: never lost
    ("2026-11-29T10:00:00Z", {"state": "closed"}, Outcome.REJECT, Reason.TARGET_CLOSED),
])
async def test_freshness_compares_instants(sims, ledger_url, temporal_env, version, fields, outcome, reason):
    name = repo()
    issue(sims, name, 7, updated_at="2026-11-29T10:00:00Z", **fields)
    async with service(sims, ledger_url, temporal_env.client) as svc:
        d = await decide(svc, triage_candidate("acme", PullRequestRef("acme", name, 7), version))
    assert (d.outcome, d.reason) == (outcome, reason), d.message
    if outcome == Outcome.DEFER:
        assert d.retry_after_seconds and "lags" in d.message


async def test_a_pull_request_is_no_triage_target_and_a_missing_issue_neither(sims, ledger_url, temporal_env):
    name = repo()
    sims.forge_ctl("POST", f"/pulls/acme/{name}/8", json={"head_sha": "ab" * 20})
    async with service(sims, ledger_url, temporal_env.client) as svc:
        for number in (8, 9):
            d = await decide(svc, triage_candidate("acme", PullRequestRef("acme", name, number), None))
            assert (d.outcome, d.reason) == (Outcome.REJECT, Reason.TARGET_NOT_FOUND), number


async def test_a_pull_request_read_and_an_issue_read_of_one_number_never_share(sims, ledger_url, temporal_env):
    """Both tasks decide #8 moments apart (inside the 3 s snapshot window): the review is admitted on
    the pull request's head, the triage refused from its own read of the issues endpoint."""
    name = repo()
    head = sims.forge_ctl("POST", f"/pulls/acme/{name}/8", json={"head_sha": "cd" * 20}).json()["head"]["sha"]
    before_pulls, before_issues = reads(sims, "pull_reads")["json"], reads(sims, "issue_reads")["json"]
    async with service(sims, ledger_url, temporal_env.client) as svc:
        review = await decide(svc, review_candidate("acme", PullRequestRef("acme", name, 8), head))
        triage = await decide(svc, triage_candidate("acme", PullRequestRef("acme", name, 8), None))
    assert (review.outcome, triage.reason) == (Outcome.ACCEPT, Reason.TARGET_NOT_FOUND)
    assert reads(sims, "pull_reads")["json"] == before_pulls + 1
    assert reads(sims, "issue_reads")["json"] == before_issues + 1


async def test_a_disabled_task_is_refused_before_any_read(sims, ledger_url, temporal_env):
    name = repo()
    issue(sims, name, 7)
    settings = settings_for(sims, ledger_url)
    settings = settings.model_copy(update={"tasks": TasksConfig(enabled=["review"])})
    before = reads(sims, "issue_reads")
    async with service(sims, ledger_url, temporal_env.client, settings) as svc:
        d = await decide(svc, triage_candidate("acme", PullRequestRef("acme", name, 7), None))
    assert (d.outcome, d.reason) == (Outcome.REJECT, Reason.UNKNOWN_TASK)
    assert reads(sims, "issue_reads") == before
