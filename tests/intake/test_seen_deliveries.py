"""Committed, final delivery answers kept in process (``intake/seen_deliveries.py``): a redelivery is
answered before its body is parsed exactly as the ledger would answer it, and only for originals
whose answer can no longer change (never a pending accept, a defer or a ``killed`` reject). Both ledgers."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import replace
from datetime import UTC, datetime

from sqlmodel import Session, select

from intake.decision import IntakeDecision, Outcome, Reason
from intake.envelope import Envelope, PullRequestRef, TriggerKind
from intake.identity import review_candidate
from intake.kill_gate import KillGate
from intake.receipts import draft_for
from intake.scope import ScopeRules
from intake.seen_deliveries import SeenDeliveries, final
from intake.service import IntakeService
from ledger import Delivery, SqlIntakeStore

V1 = hashlib.sha1(b"seen v1").hexdigest()


class NeverCalled:
    """Reader and admitter these tests must never reach (every decision here comes from the ledger)."""

    def __init__(self) -> None:
        self.calls = 0

    async def read(self, ref, tenant=None):
        self.calls += 1
        raise AssertionError(f"read {ref}")

    async def admit(self, admission):
        self.calls += 1
        raise AssertionError(f"admitted {admission.decision.work_key}")


def _delivery(ref: PullRequestRef, version: str, action: str = "synchronize"):
    now = datetime.now(UTC)
    env = Envelope(id=f"seen-{uuid.uuid4()}", source="github", type=f"pull_request.{action}",
                   subject=ref.target_id, time=now, received_at=now, trigger_kind=TriggerKind.EVENT, tenant="acme")
    return env, review_candidate("acme", ref, version)


def _service(engine, seen: SeenDeliveries | None = None, **kw) -> IntakeService:
    guard = NeverCalled()
    return IntakeService(SqlIntakeStore(engine), guard, guard, scope=ScopeRules.everything(), seen=seen, **kw)


def _seed_admitted(engine, ref: PullRequestRef) -> None:
    """V1 of ``ref`` accepted and its run marked (a version accepted and never started would be
    started by the next repeat: ``intake/starts_in_progress.py``)."""
    store = SqlIntakeStore(engine)
    accepted = store.decide(draft_for(*_delivery(ref, V1, "opened"), Outcome.ACCEPT, Reason.ADMITTED, "seed",
                                      input_version=V1))
    store.mark_admitted(accepted, f"agent/{accepted.work_key}", None)


def _ref() -> PullRequestRef:
    return PullRequestRef("acme", f"seen-{uuid.uuid4().hex[:8]}", 1)


def test_only_answers_that_cannot_change_are_final():
    assert final("reject", None, queued=False) and final("no-work", None, queued=False)
    assert final("accept", "wf-1", queued=False)
    assert not final("accept", None, queued=False)  # admission pending: the relay records the run later
    assert not final("defer", None, queued=True) and not final("defer", None, queued=False)
    assert not final("reject", None, queued=True)


def test_repeats_killed_rejects_pending_accepts_and_defers_are_not_kept():
    seen = SeenDeliveries()
    base = IntakeDecision(Outcome.REJECT, Reason.DUPLICATE_WORK, "m", receipt_id="r1", work_key="k", input_version="v")
    for n, decision in enumerate([replace(base, reason=Reason.DUPLICATE_DELIVERY), replace(base, reason=Reason.REPLAYED_BODY),
                                  replace(base, reason=Reason.KILLED), replace(base, outcome=Outcome.ACCEPT),
                                  replace(base, outcome=Outcome.DEFER, reason=Reason.CAPACITY),
                                  replace(base, receipt_id="")]):
        seen.decided("github", f"d{n}", decision)
        assert seen.answer("github", f"d{n}") is None, decision
    seen.decided("github", "kept", base)
    seen.decided("github", "admitted", replace(base, outcome=Outcome.ACCEPT, workflow_id="wf", run_id="run"))
    kept, admitted = seen.answer("github", "kept"), seen.answer("github", "admitted")
    assert kept is not None and (kept.reason, kept.receipt_id, kept.queued) == (Reason.DUPLICATE_DELIVERY, "r1", False)
    assert admitted is not None and (admitted.workflow_id, admitted.run_id) == ("wf", "run")
    assert seen.answer("other-source", "kept") is None  # keyed by source and delivery id


def test_entries_expire_and_a_zero_size_keeps_nothing():
    clock = [0.0]
    seen = SeenDeliveries(ttl_seconds=10, timer=lambda: clock[0])
    decision = IntakeDecision(Outcome.REJECT, Reason.TARGET_CLOSED, "m", receipt_id="r1")
    seen.decided("github", "d", decision)
    assert seen.answer("github", "d") is not None
    clock[0] = 11.0
    assert seen.answer("github", "d") is None
    off = SeenDeliveries(0)
    off.decided("github", "d", decision)
    assert off.answer("github", "d") is None


async def test_a_kept_answer_equals_the_ledgers_answer(engine):
    ref = _ref()
    _seed_admitted(engine, ref)
    service = _service(engine)
    env, cand = _delivery(ref, V1)
    first = await service.submit(env, cand)  # duplicate-work: a final reject, kept once committed
    assert (first.outcome, first.reason) == (Outcome.REJECT, Reason.DUPLICATE_WORK)
    early = service.known_delivery("github", env.id, "acme", datetime.now(UTC), env.type)
    from_ledger = await _service(engine, SeenDeliveries(0)).submit(env, cand)  # another replica, nothing kept
    assert early is not None and from_ledger.reason == Reason.DUPLICATE_DELIVERY
    assert early.as_json() == from_ledger.as_json()
    assert early.receipt_id == first.receipt_id


async def test_a_repeat_read_from_the_ledger_is_kept_when_final(engine):
    ref = _ref()
    store = SqlIntakeStore(engine)
    env, cand = _delivery(ref, V1, "opened")
    accepted = store.decide(draft_for(env, cand, Outcome.ACCEPT, Reason.ADMITTED, "seed", input_version=V1))
    replica = _service(engine)
    pending = await replica.submit(env, cand)  # the original is an accept whose run is not recorded yet
    assert (pending.reason, pending.receipt_id, pending.workflow_id) == (Reason.DUPLICATE_DELIVERY,
                                                                           accepted.receipt_id, None)
    assert replica.known_delivery("github", env.id, "acme", datetime.now(UTC)) is None  # may still change
    store.mark_admitted(accepted, "wf-seen", "run-seen")
    again = await replica.submit(env, cand)  # read from the ledger again, now final
    kept = replica.known_delivery("github", env.id, "acme", datetime.now(UTC))
    assert again.workflow_id == "wf-seen"
    assert kept is not None and kept.as_json() == again.as_json()


class _Kill:
    id, scope, target, actor, reason = "k1", "tenant", "acme", "alice", "stop"


class _KillsAcme:
    def active_for(self, work_key, tenant):
        return _Kill() if tenant == "acme" else None


async def test_a_killed_delivery_is_not_kept_and_is_decided_afresh(engine):
    ref = _ref()
    killed = _service(engine, kills=KillGate(_KillsAcme()))
    env, cand = _delivery(ref, V1)
    refused = await killed.submit(env, cand)
    assert (refused.outcome, refused.reason) == (Outcome.REJECT, Reason.KILLED)
    assert killed.known_delivery("github", env.id, "acme", datetime.now(UTC)) is None
    with Session(engine) as s:
        assert s.exec(select(Delivery).where(Delivery.delivery_id == env.id)).first() is None  # id not claimed



async def test_a_repeat_is_counted_not_logged_at_info_and_its_original_is(engine, caplog):
    """A repeat writes nothing (the original's line and receipt exist): DEBUG, so a storm of
    redeliveries does not cost a log line each; the decision that wrote a receipt stays INFO."""
    ref = _ref()
    _seed_admitted(engine, ref)
    service, (env, cand) = _service(engine), _delivery(ref, V1)
    with caplog.at_level("DEBUG", logger="sluicegate.intake"):
        await service.submit(env, cand)  # duplicate-work: written, INFO
        assert service.known_delivery("github", env.id, "acme", datetime.now(UTC), env.type) is not None
        await _service(engine, SeenDeliveries(0)).submit(env, cand)  # the ledger's repeat answer
    levels = [(r.levelname, "duplicate-work" in r.getMessage()) for r in caplog.records
              if r.name == "sluicegate.intake"]
    assert levels == [("INFO", True), ("DEBUG", False), ("DEBUG", False)]
