"""The intake store on SQLite and PostgreSQL: delivery dedupe, work dedupe, generations."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

from sqlmodel import Session, select

from intake.decision import Outcome, Reason
from intake.envelope import TriggerKind
from intake.receipts import ReceiptDraft
from ledger import Receipt, SqlIntakeStore, WorkItem, WorkStore, WorkVersion


def _draft(work_key: str, version: str, delivery: str | None = None, outcome=Outcome.ACCEPT,
           reason=Reason.ADMITTED) -> ReceiptDraft:
    return ReceiptDraft(outcome=outcome, reason=reason, message="test", trigger_kind=TriggerKind.EVENT,
                        source="github", received_at=datetime.now(UTC),
                        delivery_id=delivery or uuid.uuid4().hex, work_key=work_key, target_id="acme/api#1",
                        input_version=version, tenant="acme")


def _key() -> str:
    return f"acme/github:acme/api#{uuid.uuid4().int % 10**6}:review"


def test_accept_bumps_generation_per_admission(engine):
    store, key = SqlIntakeStore(engine), _key()
    first = store.decide(_draft(key, "sha1"))
    second = store.decide(_draft(key, "sha2"))
    assert (first.outcome, second.outcome) == (Outcome.ACCEPT, Outcome.ACCEPT)
    assert second.generation == first.generation + 1
    with Session(engine) as s:
        item = s.get(WorkItem, key)
    assert (item.generation, item.current_version) == (second.generation, "sha2")


def test_same_delivery_twice_is_duplicate_delivery(engine):
    store, key, delivery = SqlIntakeStore(engine), _key(), uuid.uuid4().hex
    first = store.decide(_draft(key, "sha1", delivery))
    assert store.reject_if_delivery_seen(_draft(key, "sha1", delivery)).reason == Reason.DUPLICATE_DELIVERY
    # Even when the fast check is skipped (a race), the decide transaction catches it.
    before = _receipt_count(engine)
    again = store.decide(_draft(key, "sha1", delivery))
    assert (again.outcome, again.reason) == (Outcome.REJECT, Reason.DUPLICATE_DELIVERY)
    assert again.receipt_id == first.receipt_id  # answered with the original; a repeat writes no row
    assert _receipt_count(engine) == before


def _receipt_count(engine) -> int:
    from sqlalchemy import func, select
    with Session(engine) as s:
        return s.execute(select(func.count()).select_from(Receipt)).scalar_one()


def test_new_delivery_same_version_is_duplicate_work(engine):
    store, key = SqlIntakeStore(engine), _key()
    store.decide(_draft(key, "sha1"))
    dup = store.decide(_draft(key, "sha1"))
    assert (dup.outcome, dup.reason) == (Outcome.REJECT, Reason.DUPLICATE_WORK)
    assert dup.generation is None


def test_failed_version_can_be_admitted_again_with_new_generation(engine):
    store, key = SqlIntakeStore(engine), _key()
    first = store.decide(_draft(key, "sha1"))
    WorkStore(engine).record_outcome(work_key=key, input_version="sha1", generation=first.generation,
                                     status="failed", run_id=None, result={"reason": "x"})
    retry = store.decide(_draft(key, "sha1"))
    assert retry.outcome == Outcome.ACCEPT and retry.generation == first.generation + 1


def test_reject_records_delivery_and_receipt_together(engine):
    store, key, delivery = SqlIntakeStore(engine), _key(), uuid.uuid4().hex
    rejected = store.decide(_draft(key, "old", delivery, Outcome.REJECT, Reason.STALE_VERSION))
    assert store.reject_if_delivery_seen(_draft(key, "old", delivery)) is not None
    with Session(engine) as s:
        receipt = s.get(Receipt, rejected.receipt_id)
        versions = s.exec(select(WorkVersion).where(WorkVersion.work_key == key)).all()
    assert receipt.reason == Reason.STALE_VERSION and versions == []


def test_record_without_delivery_does_not_burn_the_delivery_id(engine):
    store, key, delivery = SqlIntakeStore(engine), _key(), uuid.uuid4().hex
    store.record(_draft(key, "sha1", delivery, Outcome.REJECT, Reason.BAD_SIGNATURE))
    assert store.reject_if_delivery_seen(_draft(key, "sha1", delivery)) is None
    assert store.decide(_draft(key, "sha1", delivery)).outcome == Outcome.ACCEPT


def test_mark_admitted_fills_execution_identity(engine):
    store, key = SqlIntakeStore(engine), _key()
    decision = store.mark_admitted(store.decide(_draft(key, "sha1")), "agent/x", "run-1")
    with Session(engine) as s:
        version = s.get(WorkVersion, (key, "sha1"))
        receipt = s.get(Receipt, decision.receipt_id)
    assert (version.status, version.run_id, receipt.workflow_id) == ("admitted", "run-1", "agent/x")


def test_concurrent_deliveries_for_one_version_admit_exactly_once(engine):
    store, key = SqlIntakeStore(engine), _key()
    with ThreadPoolExecutor(max_workers=8) as pool:
        decisions = list(pool.map(lambda _: store.decide(_draft(key, "sha1")), range(16)))
    outcomes = [d.outcome for d in decisions]
    assert outcomes.count(Outcome.ACCEPT) == 1
    assert {d.reason for d in decisions if d.outcome == Outcome.REJECT} == {Reason.DUPLICATE_WORK}


def _finish(engine, key: str, version: str, generation: int) -> None:
    WorkStore(engine).record_outcome(work_key=key, input_version=version, generation=generation, status="done",
                                     run_id=None, result={})


def test_a_done_version_stays_blocking_across_close_and_reopen(engine):
    """Finding 5: closing and reopening a pull request must not re-run a version already reviewed;
    only an authenticated admin's forced trigger (``override``) does."""
    from dataclasses import replace

    store, key = SqlIntakeStore(engine), _key()
    first = store.decide(_draft(key, "sha1"))
    _finish(engine, key, "sha1", first.generation)
    assert store.decide(_draft(key, "sha1")).reason == Reason.DUPLICATE_WORK
    store.decide(_draft(key, "sha1", outcome=Outcome.REJECT, reason=Reason.TARGET_CLOSED))  # tombstone
    reopened = store.decide(_draft(key, "sha1"))
    assert (reopened.outcome, reopened.reason) == (Outcome.REJECT, Reason.DUPLICATE_WORK)
    forced = store.decide(replace(_draft(key, "sha1"), trigger_kind=TriggerKind.MANUAL, override="rerun-done: x"))
    assert forced.outcome == Outcome.ACCEPT and forced.generation == first.generation + 1


def test_re_admissions_of_one_version_are_limited(engine):
    """Finding 5: a version that keeps ending and being admitted again (forced re-runs, requeues,
    a failed version re-triggered) is refused ``readmission-limit`` past the configured count."""
    from dataclasses import replace

    store, key = SqlIntakeStore(engine, max_readmissions=2), _key()
    decision = store.decide(_draft(key, "sha1"))
    admissions = [decision]
    for _ in range(3):
        _finish(engine, key, "sha1", decision.generation)
        decision = store.decide(replace(_draft(key, "sha1"), trigger_kind=TriggerKind.MANUAL, override="rerun-done: x"))
        admissions.append(decision)
    assert [d.outcome for d in admissions] == [Outcome.ACCEPT] * 3 + [Outcome.REJECT]
    assert admissions[-1].reason == Reason.READMISSION_LIMIT
    assert "2" in admissions[-1].message
    assert SqlIntakeStore(engine).decide(_draft(_key(), "sha1")).outcome == Outcome.ACCEPT  # other versions unaffected


def test_override_reruns_a_done_version_but_never_an_in_flight_one(engine):
    from dataclasses import replace

    store, key = SqlIntakeStore(engine), _key()
    first = store.decide(_draft(key, "sha1"))
    forced = replace(_draft(key, "sha1"), override="rerun-done: reviewer asked", actor="root")
    assert store.decide(forced).reason == Reason.DUPLICATE_WORK  # still admitted, not finished
    _finish(engine, key, "sha1", first.generation)
    rerun = store.decide(replace(forced, delivery_id=uuid.uuid4().hex))
    assert rerun.outcome == Outcome.ACCEPT
    with Session(engine) as s:
        receipt = s.get(Receipt, rerun.receipt_id)
    assert (receipt.override, receipt.actor) == ("rerun-done: reviewer asked", "root")


def test_concurrent_replays_of_one_body_under_new_ids_claim_it_once(engine):
    """Racing past the pre-check, the digest's unique key still lets exactly one in."""
    from dataclasses import replace

    store, digest = SqlIntakeStore(engine), uuid.uuid4().hex * 2
    drafts = [replace(_draft(_key(), f"sha{i}"), body_digest=digest) for i in range(12)]
    with ThreadPoolExecutor(max_workers=6) as pool:
        decisions = list(pool.map(store.decide, drafts))
    assert [d.outcome for d in decisions].count(Outcome.ACCEPT) == 1
    assert {d.reason for d in decisions if d.outcome == Outcome.REJECT} == {Reason.REPLAYED_BODY}


def test_replay_check_before_the_source_read_and_the_same_id_stays_a_duplicate(engine):
    from dataclasses import replace

    store, key, digest, first_id = SqlIntakeStore(engine), _key(), uuid.uuid4().hex * 2, uuid.uuid4().hex
    first = store.decide(replace(_draft(key, "sha1", first_id), body_digest=digest))
    replay = replace(_draft(key, "sha1"), body_digest=digest)
    before = _receipt_count(engine)
    probed = store.reject_if_delivery_seen(replay)
    assert (probed.outcome, probed.reason) == (Outcome.REJECT, Reason.REPLAYED_BODY) and "replay" in probed.message
    again = store.reject_if_delivery_seen(replace(_draft(key, "sha1", first_id), body_digest=digest))
    assert again.reason == Reason.DUPLICATE_DELIVERY
    assert store.reject_if_delivery_seen(replace(_draft(key, "sha1"), body_digest=uuid.uuid4().hex * 2)) is None
    assert store.reject_if_delivery_seen(_draft(key, "sha1")) is None  # no digest (manual, scans): ids only
    assert (probed.receipt_id, again.receipt_id, probed.work_key) == (first.receipt_id, first.receipt_id, key)
    assert _receipt_count(engine) == before  # repeats are answered from the original, never written


def test_pruning_a_delivery_forgets_its_digest(engine):
    from dataclasses import replace
    from datetime import timedelta

    from sqlalchemy import update

    from ledger import Delivery

    store, digest, first_id = SqlIntakeStore(engine), uuid.uuid4().hex * 2, uuid.uuid4().hex
    store.decide(replace(_draft(_key(), "sha1", first_id), body_digest=digest))
    with Session(engine) as s, s.begin():
        s.execute(update(Delivery).where(Delivery.delivery_id == first_id)
                  .values(received_at=datetime.now(UTC) - timedelta(hours=48)))
    assert store.prune_deliveries(window_hours=24) >= 1
    assert store.reject_if_delivery_seen(replace(_draft(_key(), "sha1"), body_digest=digest)) is None


def test_concurrent_plain_rejects_of_one_delivery_claim_it_once(engine):
    """A reject that only claims the delivery and writes its receipt (``ledger/_plain_decide.py``):
    racing copies of one delivery write one receipt; the others are answered from it, no row."""
    store, key, delivery = SqlIntakeStore(engine), _key(), uuid.uuid4().hex
    before = _receipt_count(engine)
    drafts = [_draft(key, "sha1", delivery, Outcome.REJECT, Reason.DUPLICATE_WORK) for _ in range(8)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        decisions = list(pool.map(store.decide, drafts))
    [first] = [d for d in decisions if d.reason == Reason.DUPLICATE_WORK]
    repeats = [d for d in decisions if d.reason == Reason.DUPLICATE_DELIVERY]
    assert len(repeats) == 7 and {d.receipt_id for d in repeats} == {first.receipt_id}
    assert _receipt_count(engine) == before + 1
    with Session(engine) as s:
        receipt = s.exec(select(Receipt).where(Receipt.id == first.receipt_id)).one()
    assert (receipt.delivery_id, receipt.outcome, receipt.work_key) == (delivery, "reject", key)
