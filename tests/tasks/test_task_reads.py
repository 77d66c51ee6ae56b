"""Shared freshness reads are per task: an issue read never answers a pull request's intake of the
same number (nor the other way round), even inside one ``SharedReads`` key space; the kept snapshot
is judged by the task's own rule, and a lagging source never rejects from a snapshot."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from intake.envelope import Envelope, PullRequestRef, TriggerKind
from intake.forge_reader import ForgeTargetReader
from intake.freshness import TargetSnapshot
from intake.shared_reads import SharedReads
from sluicegate.forge.client import ForgeClient
from tasks.triage.target import IssueReader, triage_candidate, triage_freshness
from tests.support.sims import FORGE_TOKEN


@pytest.fixture
async def forge(sims):
    client = ForgeClient(sims.forge.base_url, FORGE_TOKEN)
    yield client
    await client.aclose()


async def test_an_issue_and_a_pull_request_of_one_number_get_their_own_snapshots(sims, forge):
    name = f"n{uuid.uuid4().hex[:8]}"
    sims.forge_ctl("POST", f"/pulls/acme/{name}/3", json={"head_sha": "ef" * 20})
    sims.forge_ctl("POST", f"/issues/acme/{name}/4", json={"title": "t", "updated_at": "2026-11-29T10:00:00Z"})
    ref3, ref4 = PullRequestRef("acme", name, 3), PullRequestRef("acme", name, 4)
    pulls = SharedReads(ForgeTargetReader(forge), task="review")
    issues = SharedReads(IssueReader(forge), task="triage", freshness=triage_freshness)
    pr, as_issue = await pulls.read(ref3, "acme"), await issues.read(ref3, "acme")
    assert (pr.exists, pr.current_version) == (True, "ef" * 20)
    assert as_issue.exists is False  # the issues endpoint answers the pull request: not a triage target
    plain = await issues.read(ref4, "acme")
    assert (plain.exists, plain.open, plain.current_version) == (True, True, "2026-11-29T10:00:00Z")
    assert (await forge.get_issue("acme", name, 4, tenant="acme"))["updated_at"] == "2026-11-29T10:00:00Z"
    # A second read of the issue is conditional (304) and still answers the issue's fields.
    again = await IssueReader(forge).read(ref4, "acme")
    assert again == plain and sims.forge_ctl("GET", "/stats").json()["issue_reads"]["not_modified"] >= 1


class _Fixed:
    def __init__(self, snapshot: TargetSnapshot) -> None:
        self.snapshot, self.reads = snapshot, 0

    async def read(self, ref: PullRequestRef, tenant: str | None = None) -> TargetSnapshot:
        self.reads += 1
        return self.snapshot


def _delivery(ref: PullRequestRef, version: str, at: datetime):
    env = Envelope(id=str(uuid.uuid4()), source="github", type="issues.edited", subject=ref.target_id, time=at,
                   received_at=at, trigger_kind=TriggerKind.EVENT, tenant="acme")
    return env, triage_candidate("acme", ref, version)


async def test_a_kept_issue_snapshot_rejects_an_older_event_but_never_a_newer_one():
    ref = PullRequestRef("acme", "api", 9)
    reader = _Fixed(TargetSnapshot(exists=True, open=True, current_version="2026-11-29T10:00:00Z"))
    shared = SharedReads(reader, task="triage", freshness=triage_freshness)
    past = datetime.now(UTC) - timedelta(seconds=1)
    await shared.read(ref, "acme")  # kept for the snapshot window
    older = _delivery(ref, "2026-11-29T09:00:00Z", past)
    newer = _delivery(ref, "2026-11-29T11:00:00Z", past)
    assert shared.rejecting_snapshot(*older) is not None  # stale-version, from the snapshot
    assert shared.rejecting_snapshot(*newer) is None  # the source lags: read again, never reject
