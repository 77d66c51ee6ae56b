"""Shared freshness reads against the real forge simulator: concurrent intakes of one target share
one read; a read begun before a delivery arrived is never shared with it; a kept snapshot is used
only to reject, never to admit."""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from datetime import UTC, datetime

import pytest

from intake.decision import Reason
from intake.envelope import Envelope, PullRequestRef, TriggerKind
from intake.freshness import TargetSnapshot, assess_freshness
from intake.identity import review_candidate
from intake.shared_reads import SharedReads, fresh_snapshot
from tests.support.forge_targets import forge_reads, seeded_target

HEAD = hashlib.sha1(b"shared head").hexdigest()


@pytest.fixture
async def target(sims):
    async with seeded_target(sims, "shared", HEAD) as target:
        yield target


def _hang(sims, ref: PullRequestRef, seconds: float = 0.5) -> None:
    sims.forge_ctl("POST", "/faults", json={"method": "GET", "path": f"/{ref.repo}/pulls/1$",
                                            "hang_seconds": seconds, "times": 1})


def _delivery(ref: PullRequestRef, version: str, received_at: datetime, action: str = "synchronize"):
    env = Envelope(id=str(uuid.uuid4()), source="github", type=f"pull_request.{action}", subject=ref.target_id,
                   time=received_at, received_at=received_at, trigger_kind=TriggerKind.EVENT, tenant="acme")
    return env, review_candidate("acme", ref, version)


async def test_concurrent_intakes_of_one_target_share_one_read(sims, target):
    ref, reader = target
    shared = SharedReads(reader)
    received = datetime.now(UTC)
    _hang(sims, ref)  # keeps the first read in flight while the others arrive
    snapshots = await asyncio.gather(*(shared.since(*_delivery(ref, f"v{n}", received)).read(ref, "acme")
                                       for n in range(6)))
    assert {s.current_version for s in snapshots} == {HEAD}
    assert (forge_reads(sims, ref), shared.started, shared.joined) == (1, 1, 5)


async def test_a_read_begun_before_a_delivery_arrived_is_shared_only_with_an_identical_event(sims, target):
    ref, reader = target
    shared = SharedReads(reader)
    _hang(sims, ref)
    early = asyncio.ensure_future(shared.since(*_delivery(ref, HEAD, datetime.now(UTC))).read(ref, "acme"))
    await asyncio.sleep(0.1)  # that read is in flight now; these deliveries arrive after it began
    same = asyncio.ensure_future(shared.since(*_delivery(ref, HEAD, datetime.now(UTC))).read(ref, "acme"))
    opened = asyncio.ensure_future(shared.since(*_delivery(ref, HEAD, datetime.now(UTC), "opened")).read(ref, "acme"))
    newer = await shared.since(*_delivery(ref, "f" * 40, datetime.now(UTC))).read(ref, "acme")
    closed = await shared.since(*_delivery(ref, HEAD, datetime.now(UTC), "closed")).read(ref, "acme")
    await asyncio.gather(early, same, opened)  # "opened" and "synchronize" of one head: the same news
    assert newer.current_version == closed.current_version == HEAD
    assert (forge_reads(sims, ref), shared.started, shared.joined) == (3, 3, 2)


async def test_a_kept_snapshot_rejects_a_delivery_it_answers_but_not_a_later_other_event(sims, target):
    ref, reader = target
    sims.forge_ctl("POST", f"/pulls/{ref.owner}/{ref.repo}/1", json={"state": "closed"})
    shared = SharedReads(reader, snapshot_seconds=30)
    before = datetime.now(UTC)
    first = await fresh_snapshot(shared, *_delivery(ref, HEAD, before), deadline=4)
    waiting = await fresh_snapshot(shared, *_delivery(ref, HEAD, before), deadline=4)  # arrived before the read
    assert assess_freshness(HEAD, first) == assess_freshness(HEAD, waiting) == Reason.TARGET_CLOSED
    assert (forge_reads(sims, ref), shared.snapshot_rejects) == (1, 1)
    same = await fresh_snapshot(shared, *_delivery(ref, HEAD, datetime.now(UTC)), deadline=4)  # identical event
    assert assess_freshness(HEAD, same) == Reason.TARGET_CLOSED and (forge_reads(sims, ref), shared.snapshot_rejects) == (1, 2)
    reopened = await fresh_snapshot(shared, *_delivery(ref, HEAD, datetime.now(UTC), "reopened"), deadline=4)
    assert isinstance(reopened, TargetSnapshot) and (forge_reads(sims, ref), shared.snapshot_rejects) == (2, 2)


async def test_a_kept_snapshot_never_admits(sims, target):
    ref, reader = target
    shared = SharedReads(reader, snapshot_seconds=30)
    before = datetime.now(UTC)
    first = await fresh_snapshot(shared, *_delivery(ref, HEAD, before), deadline=4)
    second = await fresh_snapshot(shared, *_delivery(ref, HEAD, before), deadline=4)
    assert assess_freshness(HEAD, first) is None and assess_freshness(HEAD, second) is None
    assert (forge_reads(sims, ref), shared.snapshot_rejects) == (2, 0)  # "fresh" was read again, not taken from memory
    assert shared.saw_fresh(*_delivery(ref, HEAD, before))  # ... after asking the ledger (taken_meanwhile)


async def test_a_failed_read_is_shared_and_not_kept(sims, target):
    ref, reader = target
    shared = SharedReads(reader, snapshot_seconds=30)
    sims.forge_ctl("POST", "/faults", json={"method": "GET", "path": f"/{ref.repo}/pulls/1$", "status": 503,
                                            "hang_seconds": 0.3, "times": 1})
    received = datetime.now(UTC)
    answers = await asyncio.gather(*(fresh_snapshot(shared, *_delivery(ref, HEAD, received), deadline=4)
                                     for _ in range(3)))
    assert [a.reason for a in answers] == [Reason.SOURCE_UNAVAILABLE] * 3
    assert shared.rejecting_snapshot(*_delivery(ref, "other", received)) is None
    assert (forge_reads(sims, ref), shared.started, shared.joined) == (1, 1, 2)


def _manual(ref: PullRequestRef, received_at: datetime):
    """A manual trigger without ``input_version`` ("review what is there now")."""
    env = Envelope(id=str(uuid.uuid4()), source="manual", type="manual.review", subject=ref.target_id,
                   time=received_at, received_at=received_at, trigger_kind=TriggerKind.MANUAL, tenant="acme")
    return env, review_candidate("acme", ref, None)


async def test_manual_triggers_without_a_version_share_only_reads_begun_after_their_receipt(sims, target):
    """Two such triggers carry the same (None, manual.review) but no news in common: a read (or a kept
    snapshot) begun before the second arrived may predate what the person asking saw."""
    ref, reader = target
    shared = SharedReads(reader)
    _hang(sims, ref)
    early = asyncio.ensure_future(shared.since(*_manual(ref, datetime.now(UTC))).read(ref, "acme"))
    await asyncio.sleep(0.1)  # that read is in flight now; the next trigger arrives after it began
    await shared.since(*_manual(ref, datetime.now(UTC))).read(ref, "acme")
    await early
    assert (forge_reads(sims, ref), shared.started, shared.joined) == (2, 2, 0)
    later = _manual(ref, datetime.now(UTC))
    assert not shared.saw_fresh(*later) and shared.rejecting_snapshot(*later) is None  # the kept one is older
    together = datetime.now(UTC)  # both received before the read below starts: one read answers both
    _hang(sims, ref)
    await asyncio.gather(*(shared.since(*_manual(ref, together)).read(ref, "acme") for _ in range(2)))
    assert (forge_reads(sims, ref), shared.started, shared.joined) == (3, 3, 1)
