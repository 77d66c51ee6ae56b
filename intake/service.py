"""The admission pipeline: dedupe delivery → scope → kill → freshness → policy → decide → admit.

Order matters. An authenticated redelivery whose original this process holds committed and final
is answered before its body is even parsed (:meth:`IntakeService.known_delivery`,
``intake/seen_deliveries.py``; the decisions this service commits fill it). Otherwise a redelivery is
stopped by one statement before the authoritative source is touched; the same statement tells whether the (work key, version) is already
admitted, running, queued or done, which is decided ``duplicate-work`` after the scope and
age checks, without a forge read (``intake/repeats.py``). A repository outside the declared scope (its source's for a webhook,
its tenant's for every other trigger; ``intake/scope.py``) is refused ``out-of-scope``
before the source is read, so no payload can make Sluicegate read — or spend a tenant's
forge quota and budget on — a repository nobody declared. A deferred item is held to the
scope again when it is re-decided (the configuration may have changed meanwhile). A kill in force
for the work key, its tenant or everything refuses it ``killed`` right after the scope check
(``intake/kill_gate.py``): a new delivery gets a receipt and its delivery id stays unclaimed (a
redelivery after the unkill is decided afresh); a re-decided deferred item stays queued
(:class:`HeldByKill`, skipped by the pass). The ledger checks the kill again inside the accept's
transaction (a kill committed during the read) and intake once more just before the run is started.
Freshness has two distinct parts: the event's age against its
source's bound (``too-old``) and its lead over its receipt against clock skew (``future-event``; like ``killed``
it leaves the delivery id unclaimed: the slow clock may be ours), then the authoritative re-read (``stale-version``,
``target-closed``), shared per target between concurrent intakes (``intake/shared_reads.py``). The freshness read happens outside any database transaction (it is
network I/O). The delivery record, work dedupe, generation bump and receipt commit in
one transaction (``IntakeStore.decide``) *before* the run is started, so a crash after
the commit leaves an accepted-but-not-admitted item (receipt message "admission pending")
rather than a run nobody recorded. A repeat that finds such an item starts it
(``intake/starts_in_progress.py``); the outbox relay is the backstop.

Verified means durable: once a delivery is authenticated and in scope, a source that cannot
be read (an error, or no answer within the freshness deadline) does not lose it. The
delivery is claimed, a ``defer`` receipt written and the item queued in the deferred queue,
all in one ledger transaction (``source-unavailable`` / ``freshness-deadline``); the
dispatcher re-decides it with freshness, backing off exponentially while the source stays
unreadable (``intake/unread.py``). A redelivery meanwhile is a duplicate. A source that *lags* behind an event (a task's
freshness rule: its version is newer than the source shows) is waited for the same way, but only
``UnreadPolicy.max_lag_seconds`` after the receipt: then ``source-lag-limit``.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
import logging
import time
from typing import TYPE_CHECKING, Any, Callable, Mapping

from intake.admissions_in_flight import AdmissionsInFlight
from intake.admitted_marks import AdmittedMarks
from intake.admission_rules import (age_refusal, future_refusal, lag_refusal, not_actionable, scope_refusal,
                                   is_repeat, task_refusal)
from intake.capacity.plan import Block
from intake.capacity.payload import from_payload
from intake.decide_batch import DecideBatcher
from intake.decision import IntakeDecision, Outcome, Reason
from intake.envelope import Envelope, TriggerKind, WorkCandidate
from intake.freshness import titled
from intake.kill_gate import HeldByKill, KillGate
from intake.outbox import admission_from
from intake.policy import Policy
from intake.ports import Admission, Admitter, CapacityContext, IntakeStore, TargetReader, TaskIntake
from intake.receipts import ReceiptDraft, draft_for
from intake.repeats import Repeat, duplicate_work, look_up, may_decide_early
from intake.starts_in_progress import StartsInProgress
from intake.scope import ScopeRules
from intake.seen_deliveries import SeenDeliveries
from intake.shared_reads import fresh_snapshot, taken_meanwhile
from intake.unread import Requeue, SourceRefused, UnreadPolicy, Unread, unread_context, unread_draft

if TYPE_CHECKING:
    from intake.capacity.gate import CapacityGate

log = logging.getLogger("sluicegate.intake")
LAG_RETRY_SECONDS = 5.0
"""The source's own wait asked for when it lags behind an event (a task's freshness rule said
``source-unavailable``: the event is newer than what the source answers); the backoff still applies,
and the wait ends ``UnreadPolicy.max_lag_seconds`` after the receipt (``source-lag-limit``)."""
__all__ = ["IntakeService", "Requeue"]


class IntakeService:
    def __init__(self, store: IntakeStore, targets: TargetReader, admitter: Admitter, capacity: CapacityGate | None = None, *,
                 scope: ScopeRules,
                 on_decision: Callable[[IntakeDecision, Envelope, float], None] | None = None,
                 unread: UnreadPolicy = UnreadPolicy(), kills: KillGate | None = None,
                 policy: Policy = Policy(), tasks: Mapping[str, TaskIntake] | None = None,
                 max_skew_seconds: float | None = 300.0,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC),
                 seen: SeenDeliveries | None = None) -> None:
        """``capacity``: an ``intake.capacity.gate.CapacityGate``; ``None`` admits without limits.
        ``scope``: the declared repositories (``ScopeRules.everything()`` only in tests of other stages).
        ``on_decision(decision, envelope, seconds)``: called after every decision (metrics).
        ``unread``: the freshness read's deadline and the backoff of a delivery queued unread.
        ``kills``: refuses work in a killed scope ``killed`` before any read (``None``: no kill check).
        ``policy``: the admission rules and their version (the store records the same version).
        ``tasks``: the enabled tasks' readers and rules by task name (``tasks.registry``, injected by
        the wiring); a candidate for another task is refused ``unknown-task`` before any read.
        ``None``: every candidate is read with ``targets`` under the pull-request freshness rule.
        ``max_skew_seconds``: how far an event's time may be ahead of its receipt (``future-event``
        past it, on arrival and when a queued item is re-decided; ``None``: no bound).
        ``clock``: now, for how long a lagging source has kept an event waiting (``source-lag-limit``).
        ``seen``: committed, final delivery answers kept in process (``intake/seen_deliveries.py``);
        ``None``: a default-sized one. ``SeenDeliveries(0)`` turns it off (every repeat asks the ledger)."""
        self._store = store
        self._scope = scope
        self._targets = targets
        self._admitter = admitter
        self._capacity = capacity
        self._on_decision = on_decision
        self._unread = unread
        self._kills = kills
        self._policy = policy
        self._tasks = dict(tasks) if tasks is not None else None
        self._max_skew = max_skew_seconds
        self._clock = clock
        self._seen = seen if seen is not None else SeenDeliveries()
        many = getattr(store, "decide_many", None)
        self._batch = DecideBatcher(many) if many is not None else None
        """Group commit of the decisions taken before any forge read (``intake/decide_batch.py``)."""
        self._marks = AdmittedMarks(store.mark_admitted_many)  # one transaction for concurrent marks
        self._in_flight = AdmissionsInFlight()
        """The versions this process is reading and deciding now (``intake/admissions_in_flight.py``)."""
        self._starts = StartsInProgress()
        """The versions this service is starting now (from the accept's commit to the mark) and the
        starts repeats set off (``intake/starts_in_progress.py``)."""

    def _rules(self, candidate: WorkCandidate) -> TaskIntake:
        """The candidate's task's reader and rules (its task was checked: ``task_refusal``)."""
        if self._tasks is None:
            return TaskIntake(self._targets)
        return self._tasks[candidate.task]

    def _observed(self, decision: IntakeDecision, envelope: Envelope, started: float) -> None:
        if self._on_decision is not None:
            try:
                self._on_decision(decision, envelope, time.perf_counter() - started)
            except Exception:  # noqa: BLE001 - telemetry must never change a decision
                log.exception("recording the decision's metrics failed")

    @property
    def admissions_in_flight(self) -> AdmissionsInFlight:
        """The versions being read and decided now, which their duplicates wait for (counters)."""
        return self._in_flight

    @property
    def starts(self) -> StartsInProgress:
        """The versions being started now and the starts repeats set off (counters)."""
        return self._starts

    @property
    def capacity(self) -> CapacityGate | None:
        """The capacity gate (``None``: no limits)."""
        return self._capacity

    def known_delivery(self, source: str, delivery_id: str, tenant: str, received_at: datetime,
                       event_type: str | None = None) -> IntakeDecision | None:
        """An authenticated redelivery answered before its body is parsed: the ``duplicate-delivery``
        answer when this process holds the original's committed, final answer; None otherwise (parse
        and :meth:`submit`, whose one ledger read decides it). No I/O: a dictionary lookup. Call it only
        after the sender was authenticated; counted on the decisions metric like every decision."""
        started = time.perf_counter()
        decision = self._seen.answer(source, delivery_id)
        if decision is not None:
            envelope = Envelope(id=delivery_id, source=source, type=event_type or "", subject=None, time=None,
                                received_at=received_at, trigger_kind=TriggerKind.EVENT, tenant=tenant)
            self._observed(decision, envelope, started)
            if log.isEnabledFor(logging.DEBUG):  # a repeat: counted, logged at DEBUG (see _log_level)
                log.debug("%s %s from %s: %s (%s), answered before the parse", envelope.type, delivery_id, source,
                          decision.outcome, decision.reason, extra={"work_key": decision.work_key,
                                                                    "workflow_id": decision.workflow_id,
                                                                    "run_id": decision.run_id})
        return decision

    async def submit(self, envelope: Envelope, candidate: WorkCandidate | None,
                     max_age_seconds: float | None = None) -> IntakeDecision:
        """Decide one normalized trigger and, when accepted, admit it. ``max_age_seconds``
        bounds the event's age (its source's setting); ``None`` means no bound."""
        started = time.perf_counter()
        decision = await self._decide(envelope, candidate, max_age_seconds)
        self._observed(decision, envelope, started)
        if envelope.trigger_kind == TriggerKind.EVENT:
            self._seen.decided(envelope.source, envelope.id, decision)  # committed; kept only if final
        level = _log_level(decision)
        if log.isEnabledFor(level):
            log.log(level, "%s %s from %s: %s (%s)", envelope.type, envelope.id, envelope.source, decision.outcome,
                    decision.reason, extra={"work_key": decision.work_key, "workflow_id": decision.workflow_id,
                                            "run_id": decision.run_id})
        return decision

    async def resume(self, item_id: str, payload: dict[str, Any], receipt_id: str | None = None,
                     attempts: int = 0) -> IntakeDecision:
        """Decide deferred item ``item_id`` again: freshness, policy, capacity; admit if it fits.

        Raises ``KeyError``/``ValueError``/``TypeError`` for a payload that cannot be read
        (poison), :class:`SourceRefused` when the source refuses the read for good, and
        :class:`Requeue` when the source cannot be read now, with a wait that grows
        with ``attempts`` (the item's re-decisions so far)."""
        envelope, candidate = from_payload(payload)
        started = time.perf_counter()
        decision = await self._check_and_decide(envelope, candidate, item_id, receipt_id, attempts)
        self._observed(decision, envelope, started)
        log.info("deferred %s (%s): %s (%s)", item_id, candidate.work_key, decision.outcome, decision.reason,
                 extra={"work_key": candidate.work_key, "workflow_id": decision.workflow_id})
        return decision

    def _with_key(self, draft: ReceiptDraft, envelope: Envelope, candidate: WorkCandidate) -> ReceiptDraft:
        """``draft`` with the concurrency key the work would hold (the identity bundle), for a
        decision taken without a capacity plan (the early ``duplicate-work``)."""
        if self._capacity is None or draft.concurrency_key is not None:
            return draft
        return replace(draft, concurrency_key=self._capacity.planner.key_for(candidate, envelope.source))

    def _capacity_context(self, envelope: Envelope, candidate: WorkCandidate, resume_item: str | None,
                          resume_receipt: str | None = None) -> CapacityContext | None:
        if self._capacity is None:
            if resume_item is None:
                return None
            raise ValueError("resuming a deferred item needs the capacity gate")
        return self._capacity.context(envelope, candidate, resume_item, resume_receipt)

    async def _decide_with_capacity(self, draft: ReceiptDraft, envelope: Envelope, candidate: WorkCandidate,
                                    resume_item: str | None, resume_receipt: str | None) -> IntakeDecision:
        """The capacity context and the ledger decision, in one thread hop (one per admission fewer)."""
        def decide() -> IntakeDecision:
            return self._store.decide(draft, self._capacity_context(envelope, candidate, resume_item, resume_receipt))
        return await asyncio.to_thread(decide)

    async def _decide(self, envelope: Envelope, candidate: WorkCandidate | None,
                      max_age_seconds: float | None) -> IntakeDecision:
        probe = draft_for(envelope, candidate, Outcome.REJECT, Reason.DUPLICATE_DELIVERY,
                          f"delivery {envelope.id} from {envelope.source} was already decided")
        repeat = await look_up(self._store, probe)  # one read-only statement: intake/repeats.py
        if repeat.unstarted is not None:  # its start failed or its process died: start it (its own task)
            self._starts.start_soon(*repeat.unstarted, partial(self._start_unstarted, *repeat.unstarted))
        if repeat.seen is not None:
            return self._seen_answer(envelope, repeat)
        if candidate is None:
            return await self._decide_early(not_actionable(envelope))
        if (unknown := task_refusal(envelope, candidate, self._tasks)) is not None:
            return await self._decide_early(unknown)
        outside = self._out_of_scope(envelope, candidate)
        if outside is not None:
            return await self._decide_early(outside)
        if self._kills is not None and (killed := await self._kill_refusal(envelope, candidate)):
            return await self._decide_early(killed)
        if (old := age_refusal(envelope, candidate, max_age_seconds)) is not None:
            return await self._decide_early(old)
        if (ahead := future_refusal(envelope, candidate, self._max_skew)) is not None:
            return await self._decide_early(ahead)
        if not may_decide_early(envelope):
            return await self._check_and_decide(envelope, candidate, None)
        if repeat.blocking is None:
            repeat = await self._taken_meanwhile(probe, envelope, candidate)
            if repeat.seen is not None:  # this delivery id (or body) was decided while it waited
                return self._seen_answer(envelope, repeat)
        if repeat.blocking is not None:
            return await self._decide_early(self._with_key(  # taken: no forge read needed
                duplicate_work(envelope, candidate, repeat.blocking), envelope, candidate))
        flight = self._in_flight.enter(candidate.task, candidate.tenant, candidate.work_key, candidate.input_version)
        try:  # duplicates of this version arriving meanwhile wait for its decision (_taken_meanwhile)
            return await self._check_and_decide(envelope, candidate, None, committed=flight.release)
        finally:
            flight.release()  # also on a failure or a cancellation (the client went away)

    async def _taken_meanwhile(self, probe: ReceiptDraft, envelope: Envelope, candidate: WorkCandidate) -> Repeat:
        """What the ledger holds once an intake of the same version deciding in this process is done
        (awaited, bounded; then the ledger is asked once, ``intake/admissions_in_flight.py``): why the
        version is taken (``blocking``), or this very delivery's decision (``seen``: an exact redelivery
        that arrived while its original was being decided — answered as a repeat, not read again), or
        neither (then it is read and decided). Otherwise, or when that wait gives up, a kept "fresh"
        snapshot makes the ledger be asked a few times (another process admitting it:
        ``intake/shared_reads.py``, ``taken_meanwhile``)."""
        if await self._in_flight.wait(candidate.task, candidate.tenant, candidate.work_key, candidate.input_version):
            return await look_up(self._store, probe)
        return Repeat(blocking=await taken_meanwhile(self._rules(candidate).reader, self._store, probe, envelope,
                                                     candidate))

    def _seen_answer(self, envelope: Envelope, repeat: Repeat) -> IntakeDecision:
        """A repeat's answer: the original's decision (kept in process when it can no longer change)."""
        assert repeat.seen is not None
        if repeat.seen_final and envelope.trigger_kind == TriggerKind.EVENT:
            self._seen.read_back(envelope.source, envelope.id, repeat.seen, True)
        return repeat.seen

    async def _kill_refusal(self, envelope: Envelope, candidate: WorkCandidate) -> ReceiptDraft | None:
        """The kill gate's refusal: on the event loop when the ledger can answer at once (SQLite), else
        in a worker thread. Asked before the decision and again just before the run is started."""
        assert self._kills is not None
        if (now := self._kills.refusal_inline(envelope, candidate)) is not None:
            return now[0]
        return await asyncio.to_thread(self._kills.refusal, envelope, candidate)

    async def _decide_early(self, draft: ReceiptDraft) -> IntakeDecision:
        """Decide a draft taken before any forge read (no capacity context): batched with the others
        arriving meanwhile when the store can (group commit), else in a thread of its own."""
        if self._batch is not None:
            return await self._batch.decide(draft)
        return await asyncio.to_thread(self._store.decide, draft)

    async def _check_and_decide(self, envelope: Envelope, candidate: WorkCandidate, resume_item: str | None,
                                resume_receipt: str | None = None, attempts: int = 0,
                                committed: Callable[[], None] | None = None) -> IntakeDecision:
        """Freshness against the source, policy, then the ledger decision with capacity. ``committed``:
        called once the accept draft's decision is committed (accepted, or deferred or rejected by the
        ledger), before the run is started: it releases duplicates waiting for it."""
        if resume_item is not None and (refused := await self._refused_on_resume(envelope, candidate)) is not None:
            return _held_if_killed(await self._decide_with_capacity(refused, envelope, candidate, resume_item,
                                                                    resume_receipt), resume_item)
        if resume_item is not None and (unknown := task_refusal(envelope, candidate, self._tasks)) is not None:
            return await self._decide_with_capacity(unknown, envelope, candidate, resume_item,
                                                    resume_receipt)  # disabled since it was queued
        rules = self._rules(candidate)
        snapshot = await fresh_snapshot(rules.reader, envelope, candidate, self._unread.deadline_seconds)
        stale = None if isinstance(snapshot, Unread) else rules.freshness(
            candidate.input_version, snapshot, candidate.content_digest)
        if stale == Reason.SOURCE_UNAVAILABLE and (
                lagged := lag_refusal(envelope, candidate, self._clock(), self._unread.max_lag_seconds)) is not None:
            return await self._decide_with_capacity(lagged, envelope, candidate, resume_item,
                                                    resume_receipt)  # never shown: waiting cannot help
        if stale == Reason.SOURCE_UNAVAILABLE:  # the source lags behind the event: wait (bounded), never reject
            snapshot = Unread(Reason.SOURCE_UNAVAILABLE, LAG_RETRY_SECONDS,
                              f"{candidate.target.target_id}: the source does not show version "
                              f"{candidate.input_version} yet (it lags behind the event)")
        if isinstance(snapshot, Unread):
            retry = self._unread.wait(attempts + 1 if resume_item is not None else 0, snapshot.retry_after)
            if resume_item is not None:
                if snapshot.permanent:  # waiting cannot help: a dispatch failure, dead-lettered past the limit
                    raise SourceRefused(snapshot.message)
                raise Requeue(Block.SOURCE, retry, snapshot.message)
            ctx = await asyncio.to_thread(unread_context, self._capacity, envelope, candidate)
            return await asyncio.to_thread(self._store.decide, unread_draft(envelope, candidate, snapshot, retry), ctx)
        version = candidate.input_version or snapshot.current_version
        if stale is not None:
            return await self._decide_with_capacity(draft_for(
                envelope, candidate, Outcome.REJECT, stale,
                _freshness_message(stale, candidate, snapshot.current_version), input_version=version),
                envelope, candidate, resume_item, resume_receipt)
        rule = self._policy.evaluate(candidate, snapshot)
        if rule is None and rules.policy is not None:
            rule = rules.policy(candidate, snapshot)
        if rule is not None:
            return await self._decide_with_capacity(draft_for(
                envelope, candidate, Outcome.REJECT, rule,
                f"refused by {rule} under policy {self._policy.version}", input_version=version),
                envelope, candidate, resume_item, resume_receipt)
        accept = draft_for(envelope, candidate, Outcome.ACCEPT, Reason.ADMITTED,
                           f"admitting {candidate.work_key} at {version}", input_version=version)
        with self._starts.hold(candidate.work_key, version):  # until the mark: a repeat meanwhile starts nothing
            decision = await self._decide_with_capacity(replace(accept, ordered_versions=rules.ordered_versions),
                                                        envelope, candidate, resume_item, resume_receipt)
            if committed is not None:
                committed()
            if decision.outcome != Outcome.ACCEPT:
                return _held_if_killed(decision, resume_item)
            return await self._admit(Admission(decision, envelope, titled(candidate, snapshot)))

    async def _refused_on_resume(self, envelope: Envelope, candidate: WorkCandidate) -> ReceiptDraft | None:
        """A deferred item is held to the scope, the clock-skew bound and kills again: out of scope or
        ``future-event`` (an item queued before the bound existed) drops it with a receipt; a kill
        keeps it queued (the store writes one receipt per kill; see ``_held_if_killed``)."""
        if (outside := self._out_of_scope(envelope, candidate)) is not None:
            return outside
        if (ahead := future_refusal(envelope, candidate, self._max_skew)) is not None or self._kills is None:
            return ahead
        return await asyncio.to_thread(self._kills.refusal, envelope, candidate)

    def _out_of_scope(self, envelope: Envelope, candidate: WorkCandidate) -> ReceiptDraft | None:
        return scope_refusal(self._scope, envelope, candidate)

    async def _start_unstarted(self, work_key: str, version: str) -> bool:
        """Start a version a repeat found accepted and never started (``intake/starts_in_progress.py``,
        which runs this in a task of its own) as an accept starts its run — the kill check,
        signal-with-start, the mark — but writing nothing when it cannot: a failure or a kill in force
        is logged and leaves the version to a later repeat or the outbox relay. True: started."""
        try:
            pending = await asyncio.to_thread(self._store.pending_admission, work_key, version)
            if pending is None:  # started meanwhile (another process, the relay), or no longer accepted
                return False
            admission = admission_from(pending)
            if self._kills is not None and (killed := await self._kill_refusal(admission.envelope,
                                                                             admission.candidate)):
                log.info("not starting %s@%s, accepted and never started: %s", work_key, version,
                         killed.message, extra={"work_key": work_key})
                return False
            workflow_id, run_id = await self._admitter.admit(admission)
            await self._marks.mark(admission.decision, workflow_id, run_id)
        except Exception as exc:  # noqa: BLE001 - a later repeat or the outbox relay tries again
            log.warning("could not start %s@%s, accepted and never started: %r; left to a later repeat or "
                        "the outbox relay", work_key, version, exc, extra={"work_key": work_key})
            return False
        log.info("started %s@%s, accepted and never started, on a repeat of its delivery", work_key, version,
                 extra={"work_key": work_key, "workflow_id": workflow_id, "run_id": run_id})
        return True

    async def wait_for_starts(self, timeout: float) -> int:
        """Let the starts that repeats set off end (at most ``timeout`` seconds, then they are cut off
        and counted): the API's shutdown. Returns how many were cut off."""
        return await self._starts.wait(timeout)

    async def _admit(self, admission: Admission) -> IntakeDecision:
        decision = admission.decision
        if self._kills is not None and (killed := await self._kill_refusal(admission.envelope, admission.candidate)):
            # Accepted just before a kill committed: start nothing while the kill is in force; the
            # version stays ``accepted`` and the outbox relay starts it after the unkill.
            return await asyncio.to_thread(self._store.mark_admission_failed, decision,
                                           f"held: {killed.message}")
        try:
            workflow_id, run_id = await self._admitter.admit(admission)
        except Exception as exc:  # noqa: BLE001 - any failure leaves the item for the outbox
            log.error("admission failed for %s@%s: %r", decision.work_key, decision.input_version, exc,
                      extra={"work_key": decision.work_key})
            return await asyncio.to_thread(self._store.mark_admission_failed, decision, repr(exc))
        return await self._marks.mark(decision, workflow_id, run_id)  # waits for the commit holding it


def _log_level(decision: IntakeDecision) -> int:
    """INFO for a decision (one line each, its receipt has the details); DEBUG for a repeat
    (``duplicate-delivery``, ``replayed-body``): it writes nothing and is answered from its original,
    whose line and receipt already exist, so, like the ledger, it costs a counter
    (``sluicegate.intake.decisions`` by reason), not a line per resend: a duplicate storm's
    redeliveries spent most of their answer's CPU formatting and writing this line (py-spy)."""
    return logging.DEBUG if is_repeat(decision) else logging.INFO


def _held_if_killed(decision: IntakeDecision, resume_item: str | None) -> IntakeDecision:
    """A re-decided deferred item refused ``killed`` stays queued: the dispatcher skips it."""
    if resume_item is not None and decision.reason == Reason.KILLED:
        raise HeldByKill(decision.message)
    return decision


def _freshness_message(reason: Reason, candidate: WorkCandidate, current: str | None) -> str:
    target = candidate.target.target_id
    if reason == Reason.STALE_VERSION:
        return f"{target}: event is for {candidate.input_version} but the current version is {current}"
    if reason == Reason.TARGET_CLOSED:
        return f"{target} is closed at the source"
    return f"{target} does not exist at the source"
