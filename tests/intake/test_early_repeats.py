"""The early repeat check: a taken (work key, version) is ``duplicate-work`` from the ledger with no
forge read (counted by the forge simulator), its receipt still written; a redelivery reads nothing;
a close event still reads the forge (its tombstone). Both ledgers."""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime

from sqlmodel import Session, select, update

from intake.decision import Outcome, Reason
from intake.envelope import Envelope, PullRequestRef, TriggerKind
from intake.forge_reader import ForgeTargetReader
from intake.freshness import assess_freshness
from intake.identity import review_candidate
from intake.receipts import draft_for
from intake.scope import ScopeRules
from intake.service import IntakeService
from intake.shared_reads import SharedReads, fresh_snapshot, taken_meanwhile
from ledger import Receipt, SqlIntakeStore, WorkItem, WorkVersion
from sluicegate.forge.client import ForgeClient
from tests.support.sims import FORGE_TOKEN


V1, V2 = (hashlib.sha1(name).hexdigest() for name in (b"early v1", b"early v2"))


class NoAdmissions:
    """These tests never admit: an admission would be a wrong answer."""

    async def admit(self, admission):
        raise AssertionError(f"admitted {admission.decision.work_key}")


def _delivery(ref: PullRequestRef, version: str, action: str = "synchronize"):
    now = datetime.now(UTC)
    env = Envelope(id=str(uuid.uuid4()), source="github", type=f"pull_request.{action}", subject=ref.target_id,
                   time=now, received_at=now, trigger_kind=TriggerKind.EVENT, tenant="acme")
    return env, review_candidate("acme", ref, version)


def _reads(sims, ref: PullRequestRef) -> int:
    return sims.forge_ctl("GET", "/stats").json()["by_repository"].get(f"{ref.owner}/{ref.repo}".lower(), 0)


def _taken(store: SqlIntakeStore, ref: PullRequestRef, version: str):
    env, cand = _delivery(ref, version, "opened")
    first = store.decide(draft_for(env, cand, Outcome.ACCEPT, Reason.ADMITTED, "seed", input_version=version))
    assert first.outcome == Outcome.ACCEPT
    return first


async def _service(engine, sims):
    forge = ForgeClient(sims.forge.base_url, FORGE_TOKEN)
    return IntakeService(SqlIntakeStore(engine), ForgeTargetReader(forge), NoAdmissions(),
                         scope=ScopeRules.everything()), forge


async def test_an_accepted_version_is_duplicate_work_without_a_forge_read_and_keeps_a_receipt(engine, sims):
    ref = PullRequestRef("acme", f"early-{uuid.uuid4().hex[:8]}", 1)
    first = _taken(SqlIntakeStore(engine), ref, V1)
    service, forge = await _service(engine, sims)
    try:
        env, cand = _delivery(ref, V1)
        decision = await service.submit(env, cand)
        again = await service.submit(env, cand)  # its redelivery: answered from it, nothing read
    finally:
        await forge.aclose()
    assert (decision.outcome, decision.reason) == (Outcome.REJECT, Reason.DUPLICATE_WORK)
    assert first.receipt_id in decision.message
    assert (again.reason, again.receipt_id) == (Reason.DUPLICATE_DELIVERY, decision.receipt_id)
    assert _reads(sims, ref) == 0
    with Session(engine) as s:
        receipt = s.exec(select(Receipt).where(Receipt.delivery_id == env.id)).one()
    assert (receipt.id, receipt.reason, receipt.input_version) == (decision.receipt_id, "duplicate-work", V1)


async def test_a_done_version_is_duplicate_work_without_a_read_but_a_cancelled_one_is_read(engine, sims):
    ref = PullRequestRef("acme", f"early-{uuid.uuid4().hex[:8]}", 1)
    sims.forge_ctl("POST", f"/pulls/{ref.owner}/{ref.repo}/1", json={"head_sha": V1})
    store = SqlIntakeStore(engine)
    first = _taken(store, ref, V1)
    with Session(engine) as s, s.begin():
        s.execute(update(WorkVersion).where(WorkVersion.work_key == first.work_key).values(status="done"))
    service, forge = await _service(engine, sims)
    try:
        done = await service.submit(*_delivery(ref, V1))
        assert (done.reason, _reads(sims, ref)) == (Reason.DUPLICATE_WORK, 0)
        with Session(engine) as s, s.begin():
            s.execute(update(WorkVersion).where(WorkVersion.work_key == first.work_key).values(status="cancelled"))
        cancelled = await service.submit(*_delivery(ref, V1))
    finally:
        await forge.aclose()
    # cancelled is left to the full path (a reset or a manual trigger may run it again): it reads
    assert (cancelled.reason, _reads(sims, ref)) == (Reason.DUPLICATE_WORK, 1)


async def test_a_close_event_for_an_admitted_version_still_reads_and_tombstones(engine, sims):
    ref = PullRequestRef("acme", f"early-{uuid.uuid4().hex[:8]}", 1)
    sims.forge_ctl("POST", f"/pulls/{ref.owner}/{ref.repo}/1", json={"head_sha": V1, "state": "closed"})
    first = _taken(SqlIntakeStore(engine), ref, V1)
    service, forge = await _service(engine, sims)
    try:
        closed = await service.submit(*_delivery(ref, V1, "closed"))
    finally:
        await forge.aclose()
    assert (closed.reason, _reads(sims, ref)) == (Reason.TARGET_CLOSED, 1)
    with Session(engine) as s:
        assert s.get(WorkItem, first.work_key).reset_at is not None


async def test_a_new_version_of_a_taken_work_key_is_read(engine, sims):
    ref = PullRequestRef("acme", f"early-{uuid.uuid4().hex[:8]}", 1)
    sims.forge_ctl("POST", f"/pulls/{ref.owner}/{ref.repo}/1", json={"head_sha": V1})
    _taken(SqlIntakeStore(engine), ref, V1)
    service, forge = await _service(engine, sims)
    try:
        newer = await service.submit(*_delivery(ref, V2))
    finally:
        await forge.aclose()
    assert (newer.reason, _reads(sims, ref)) == (Reason.STALE_VERSION, 1)  # the forge still says V1


async def test_a_version_taken_while_its_duplicate_waited_is_found_again_without_a_read(engine, sims):
    """A kept "fresh" snapshot for the same version never admits: the ledger is asked again instead."""
    ref = PullRequestRef("acme", f"early-{uuid.uuid4().hex[:8]}", 1)
    sims.forge_ctl("POST", f"/pulls/{ref.owner}/{ref.repo}/1", json={"head_sha": V1})
    store = SqlIntakeStore(engine)
    forge = ForgeClient(sims.forge.base_url, FORGE_TOKEN)
    shared = SharedReads(ForgeTargetReader(forge), snapshot_seconds=30)
    try:
        env, cand = _delivery(ref, V1)
        probe = draft_for(env, cand, Outcome.REJECT, Reason.DUPLICATE_DELIVERY, "probe")
        assert await taken_meanwhile(shared, store, probe, env, cand) is None  # nothing kept yet
        assert assess_freshness(V1, await fresh_snapshot(shared, *_delivery(ref, V1), deadline=4)) is None
        assert await taken_meanwhile(shared, store, probe, env, cand) is None  # kept fresh, not taken yet
        first = _taken(store, ref, V1)  # the other intake admits it meanwhile
        taken = await taken_meanwhile(shared, store, probe, env, cand)
    finally:
        await forge.aclose()
    assert taken is not None and first.receipt_id in taken
    assert _reads(sims, ref) == 1
