"""Two trigger events with the same content (``opened``, then ``reopened``) are two versions of one
triage work key. The older one delivered after the newer one was taken (accepted, admitted, done) is
``stale-version``: the newer run read the issue as it was then, which covers the older event's
content. Decided by the ledger under the accept's lock (``intake.admission_rules.newer_version_refusal``,
``ledger/_intake_store.py``), so it holds for a queued item re-decided later too. A newer version
that ended otherwise (failed, cancelled, killed) does not refuse it; an admin's override is never
refused this way; review's head shas have no order and are never compared.

The forge simulator over HTTP, the real intake wiring, a real ledger on both backends.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from sqlmodel import Session

from intake.decision import Outcome, Reason
from intake.envelope import Envelope, PullRequestRef, TriggerKind, WorkCandidate
from intake.service import IntakeService
from ledger import SqlIntakeStore, WorkVersion
from sluicegate.forge.client import ForgeClient
from sluicegate.forge.issue_digest import issue_content_digest
from sluicegate.services.intake import capacity_gate, scope_rules, task_intake, unread_policy
from tasks.triage.target import parse_version, triage_candidate
from tests.support.sims import FORGE_TOKEN, settings_for

OPENED, REOPENED = "2026-11-29T10:00:00Z", "2026-11-29T11:00:00Z"
DIGEST = issue_content_digest("Crash on start", "boom")


class Admits:
    async def admit(self, admission):
        return f"agent/{admission.decision.work_key}", f"run-{uuid.uuid4().hex[:6]}"


@pytest.fixture
async def svc(sims, ledger_url, engine):
    settings = settings_for(sims, ledger_url)
    forge = ForgeClient(sims.forge.base_url, FORGE_TOKEN, timeout_seconds=2)
    tasks = task_intake(settings, forge)
    yield IntakeService(SqlIntakeStore(engine), tasks["triage"].reader, Admits(), capacity_gate(settings, engine),
                        scope=scope_rules(settings), unread=unread_policy(settings), tasks=tasks,
                        clock=lambda: datetime(2026, 11, 29, 11, 0, 30, tzinfo=UTC))
    await forge.aclose()


def _delivery(name: str, version: str, action: str, override: str | None = None) -> tuple[Envelope, WorkCandidate]:
    cand = triage_candidate("acme", PullRequestRef("acme", name, 7), version, content_digest=DIGEST)
    env = Envelope(id=str(uuid.uuid4()), source="github", type=f"issues.{action}", subject=cand.target.target_id,
                   time=parse_version(version), received_at=parse_version(version), trigger_kind=TriggerKind.EVENT,
                   tenant="acme", override=override)
    return env, cand


def _issue(sims) -> str:
    name = f"o{uuid.uuid4().hex[:8]}"
    sims.forge_ctl("POST", f"/issues/acme/{name}/7", json={"title": "Crash on start", "body": "boom",
                                                            "updated_at": REOPENED})
    return name


def _end(engine, key: str, version: str, status: str) -> None:
    """The run of ``version`` ended ``status`` (what the worker records)."""
    with Session(engine) as s:
        row = s.get(WorkVersion, (key, version))
        row.status = status
        s.add(row)
        s.commit()


@pytest.mark.parametrize("newer_status", ["admitted", "done"])
async def test_the_older_same_content_event_after_the_newer_was_taken_is_stale(sims, engine, svc, newer_status):
    name = _issue(sims)
    newer = await svc.submit(*_delivery(name, REOPENED, "reopened"))
    assert (newer.outcome, newer.reason) == (Outcome.ACCEPT, Reason.ADMITTED), newer.message
    if newer_status == "done":
        _end(engine, newer.work_key, REOPENED, "done")
    older = await svc.submit(*_delivery(name, OPENED, "opened"))
    assert (older.outcome, older.reason) == (Outcome.REJECT, Reason.STALE_VERSION), older.message
    assert f"older than {REOPENED}, already {newer_status}" in older.message
    with Session(engine) as s:
        assert s.get(WorkVersion, (newer.work_key, OPENED)) is None  # nothing admitted at the older version


@pytest.mark.parametrize("newer_status", ["failed", "cancelled", "killed"])
async def test_a_newer_version_that_did_not_finish_does_not_refuse_the_older(sims, engine, svc, newer_status):
    name = _issue(sims)
    newer = await svc.submit(*_delivery(name, REOPENED, "reopened"))
    _end(engine, newer.work_key, REOPENED, newer_status)
    older = await svc.submit(*_delivery(name, OPENED, "opened"))
    assert (older.outcome, older.reason) == (Outcome.ACCEPT, Reason.ADMITTED), older.message


async def test_the_newer_event_after_the_older_is_admitted_as_before(sims, engine, svc):
    name = _issue(sims)
    older = await svc.submit(*_delivery(name, OPENED, "opened"))
    assert (older.outcome, older.reason) == (Outcome.ACCEPT, Reason.ADMITTED), older.message
    _end(engine, older.work_key, OPENED, "done")
    newer = await svc.submit(*_delivery(name, REOPENED, "reopened"))
    assert (newer.outcome, newer.reason) == (Outcome.ACCEPT, Reason.ADMITTED), newer.message


async def test_an_admin_override_is_not_refused_for_a_newer_version(sims, engine, svc):
    name = _issue(sims)
    newer = await svc.submit(*_delivery(name, REOPENED, "reopened"))
    _end(engine, newer.work_key, REOPENED, "done")
    env, cand = _delivery(name, OPENED, "opened", override="rerun-done: checking the old one")
    forced = await svc.submit(replace(env, trigger_kind=TriggerKind.MANUAL, actor="alice"), cand)
    assert (forced.outcome, forced.reason) == (Outcome.ACCEPT, Reason.ADMITTED), forced.message
