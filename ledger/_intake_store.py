"""The ledger side of intake: receipts, delivery dedupe, work dedupe and generations.

Replays: a webhook delivery carries the digest of its signed content (less the delivery
id). The digest is claimed on the delivery row, under a unique key per source, in the same
statement as the delivery id, so two requests replaying one body under two new ids cannot
both get in; the pre-check (before the source is read) stops a replay cheaply, the claim
makes it race-safe. The digest is pruned with the delivery id.

Concurrency: two deliveries for one (work key, version) can race through freshness at
the same time. The delivery insert is ``ON CONFLICT DO NOTHING``; the work-version
insert relies on its primary key, and the loser's transaction fails with an integrity
error and is decided again, when it sees the winner's row and becomes
``duplicate-work``. A transaction PostgreSQL aborted as a deadlock victim (or a serialization
failure) is decided again the same way: it wrote nothing, and answering the verified delivery
``503 ledger-unavailable`` would lose it (GitHub does not redeliver). Generations are bumped with an atomic upsert, so every admission of
a work key gets a distinct, increasing fencing token. Re-admitting an ended version reads
its row ``FOR UPDATE``: a second replica waits for the first's commit and sees it.

Kills: an accept reads the kills in force inside its own transaction, before the delivery is
claimed (``ledger/_kills.py`` orders that read against kill writes), so a kill committed while
the freshness read was in flight turns the accept into a ``killed`` reject. A ``killed`` reject
never claims the delivery id or its body: the work was verified, and a redelivery after the
unkill is decided afresh. A deferred item found killed stays queued, untouched; its ``killed``
receipt is written once per item and kill (a deterministic id), however many passes see it.
A ``future-event`` reject claims nothing either (``admission_rules.leaves_delivery_unclaimed``): the
slow clock may be ours, and the redelivery after it is fixed must be decided afresh.

Ordered versions (triage): an accept older than a version of its work key already accepted,
admitted or done is refused ``stale-version`` (``admission_rules.newer_version_refusal``), read in
the accept's transaction. Race-safe: such an accept first takes its work key's version-order lock
(``ledger/_version_order_lock.py``, PostgreSQL; SQLite's ``BEGIN IMMEDIATE`` already serializes), so
of two concurrent accepts of two versions the second reads after the first committed.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence
from datetime import timedelta

from sqlalchemy import bindparam, exists, insert, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlmodel import Session, col

from intake.admission_rules import (duplicate_work, leaves_delivery_unclaimed, newer_version_refusal,
                                   readmission_refusal, repeat_reason, stale_resume_reason)
from intake.decision import IntakeDecision, Outcome, Reason
from intake.envelope import TriggerKind
from intake.kill_gate import held_receipt_id, is_killed, killed_instead
from intake.outbox import PendingAdmission
from intake.policy import Policy
from intake.ports import CapacityContext
from intake.receipts import ACTIVITY_ATTEMPT, ReceiptDraft
from ledger import _deferred
from ledger._accept_sql import (INSERT_RECEIPT, INSERT_VERSION, LOCK_VERSION, MARK_ITEMS, MARK_RECEIPTS, MARK_VERSIONS,
                               UPSERT_ITEM)
from ledger._admission_capacity import apply_capacity, queue_unread
from ledger._capacity import stamp_generation
from ledger._capacity_models import DeferredItem
from ledger._kill_rows import in_force_covering
from ledger._kills import kill_in_force
from ledger._models import Delivery, Receipt, WorkItem, WorkVersion
from ledger._plain_decide import CLAIM_DELIVERY, decide_plain, decide_plain_many, is_plain
from ledger._engine import single_read
from ledger._inline_read import InlineReader
from ledger._repeats import RepeatRows, blocking_reason, find_repeat, original_answer, original_final, unstarted
from intake.repeats import Repeat
from ledger._sql import as_utc, dialect_insert, new_id, utcnow
from ledger._version_order_lock import lock_version_order
from workflows.contracts import RunStatus

# A version in one of these states blocks another admission of the same version.
IN_FLIGHT_STATUSES = frozenset({"accepted", "admitted"})
BLOCKING_STATUSES = IN_FLIGHT_STATUSES | {RunStatus.DONE, RunStatus.CANCELLED}
_MAX_RACE_RETRIES = 3
_RETRIED_SQLSTATES = frozenset({"40P01", "40001"})
"""PostgreSQL's deadlock_detected and serialization_failure: the server rolled the whole transaction
back, so nothing was written and deciding again is safe (never a lost connection: that is the 503)."""


def _rolled_back_by_the_server(exc: OperationalError) -> bool:
    return getattr(exc.orig, "sqlstate", None) in _RETRIED_SQLSTATES


def _receipt_row(draft: ReceiptDraft, receipt_id: str, generation: int | None = None,
                 policy_version: str | None = None) -> dict:
    """A receipts row as a plain dict (Core insert: no ORM object per decision on the hot path).
    ``policy_version``: the store's, for a draft that names none."""
    row = {k: getattr(draft, k) for k in _DRAFT_FIELDS}
    row["policy_version"] = row["policy_version"] or policy_version
    if row["activity_attempt"] is None:
        row["activity_attempt"] = ACTIVITY_ATTEMPT.get()
    row.update(id=receipt_id, created_at=utcnow(), generation=generation, outcome=str(draft.outcome),
               trigger_kind=str(draft.trigger_kind), workflow_id=None, run_id=None, operation_keys=[],
               external_ids=[], reject_digest=None)
    return row


def _decision_from_row(row: dict) -> IntakeDecision:
    return IntakeDecision(outcome=Outcome(row["outcome"]), reason=row["reason"], message=row["message"],
                          receipt_id=row["id"], work_key=row["work_key"], input_version=row["input_version"],
                          generation=row["generation"], retry_after_seconds=row["retry_after_seconds"],
                          policy_version=row["policy_version"], override=row["override"])


_RECEIPTS = Receipt.__table__
_DELIVERIES = Delivery.__table__
_DRAFT_FIELDS = tuple(f for f in ReceiptDraft.__dataclass_fields__ if f in _RECEIPTS.c)

DEFAULT_MAX_READMISSIONS = 3


class SqlIntakeStore:
    """:class:`intake.ports.IntakeStore` on SQLModel (SQLite or PostgreSQL)."""

    def __init__(self, engine: Engine, max_readmissions: int = DEFAULT_MAX_READMISSIONS,
                 policy: Policy = Policy()) -> None:
        """``max_readmissions``: how often one (work key, version) may be admitted again after it
        ended (forced re-runs, requeues, a failed version triggered anew). Re-admitting a version
        that ended ``killed`` does not count (docs/security.md). ``policy``: its version is stamped on
        every receipt written here, and it says whether a policy change re-runs a ``done`` version."""
        self._engine = engine
        self._policy = policy
        self._max_readmissions = max_readmissions
        self._inline = InlineReader.for_engine(engine)
        """SQLite: ``find_repeat_inline`` on a connection of its own (``ledger/_inline_read.py``)."""

    def record(self, draft: ReceiptDraft) -> IntakeDecision:
        row = _receipt_row(draft, new_id(), policy_version=self._policy.version)
        with self._engine.begin() as conn:
            conn.execute(insert(_RECEIPTS), row)
        return _decision_from_row(row)

    def record_reject(self, draft: ReceiptDraft) -> IntakeDecision:
        """A verified delivery rejected before intake (its normalize stage refused it): answered from
        the earlier record when its delivery id or its content (``draft.body_digest``; None: compare
        ids only) was seen already — decided by intake, or rejected here before — writing nothing
        (``duplicate-delivery`` / ``replayed-body``); else its reject receipt, carrying the digest.

        A signed body verifies whatever its unsigned headers say (GitHub signs the body only), so a
        captured body resent under new delivery ids with another ``X-GitHub-Event`` or
        ``Content-Type`` wrote a reject receipt each: a durable row per request for anyone holding
        one captured delivery. Now that costs one row per content. The delivery id is still not
        claimed: a genuine delivery of it (a redelivery once the source's settings are fixed) is
        decided as usual."""
        seen = self.reject_repeat(draft)
        if seen is not None:
            return seen
        row = {**_receipt_row(draft, new_id(), policy_version=self._policy.version), "reject_digest": draft.body_digest}
        with self._engine.begin() as conn:
            conn.execute(insert(_RECEIPTS), row)
        return _decision_from_row(row)

    def reject_repeat(self, draft: ReceiptDraft) -> IntakeDecision | None:
        """Read-only: the answer to a repeat of a delivery about to be rejected before intake (see
        :meth:`record_reject`), or None when neither its id nor its content was seen."""
        seen = self.find_repeat(draft).seen
        if seen is not None:
            return seen
        with single_read(self._engine) as conn:  # two lookups, each on its index (an OR of both scans on SQLite)
            found = [conn.execute(_EARLIER_REJECT_OF_ID, {"p_source": draft.source, "p_delivery_id": draft.delivery_id})
                     .first()]
            if draft.body_digest is not None:
                found.append(conn.execute(_EARLIER_REJECT_OF_DIGEST, {"p_source": draft.source,
                                                                      "p_digest": draft.body_digest}).first())
        earlier = min((row for row in found if row is not None), key=lambda row: row.created_at, default=None)
        if earlier is None:
            return None
        reason, message = repeat_reason(draft, same_body=earlier.delivery_id != draft.delivery_id)
        return IntakeDecision(Outcome.REJECT, str(reason), message, receipt_id=earlier.id)

    def record_once(self, draft: ReceiptDraft, receipt_id: str, generation: int | None = None,
                    workflow_id: str | None = None, run_id: str | None = None) -> str:
        """Write a receipt under a deterministic ``receipt_id`` unless it exists (an activity's retry
        writes nothing more); returns the id. For decisions made inside a run (the policy re-check)."""
        row = _receipt_row(draft, receipt_id, generation, self._policy.version)
        row.update(workflow_id=workflow_id, run_id=run_id)
        with Session(self._engine) as s, s.begin():
            s.execute(dialect_insert(s, Receipt).values(**row).on_conflict_do_nothing())
        return receipt_id

    def reject_if_delivery_seen(self, draft: ReceiptDraft) -> IntakeDecision | None:
        """Read-only: the original delivery's decision when the delivery id is already recorded
        (``duplicate-delivery``) or its body digest is, under another id (``replayed-body``).
        Repeats write no row — a sender (or a replayer) resending costs a counter
        (``sluicegate.intake.decisions`` by reason), not a receipt."""
        if draft.delivery_id is None:
            return None
        return self.find_repeat(draft).seen

    def find_repeat(self, draft: ReceiptDraft) -> Repeat:
        """Read-only, one statement (``ledger/_repeats.py``): the original decision if the delivery
        (or its body) was already decided, else why its (work key, version) is already taken."""
        with single_read(self._engine) as conn:
            return self._repeat(find_repeat(conn, draft), draft)

    def find_repeat_inline(self, draft: ReceiptDraft) -> Repeat | None:
        """:meth:`find_repeat` on the calling thread (the event loop) if it can answer at once: SQLite
        only, its own connection, a 20 ms busy timeout. None: run :meth:`find_repeat` in a thread."""
        if self._inline is None:
            return None
        rows = self._inline.run(lambda conn: find_repeat(conn, draft))
        return None if rows is None else self._repeat(rows, draft)

    def _repeat(self, rows: RepeatRows, draft: ReceiptDraft) -> Repeat:
        seen = original_answer(rows, draft) if draft.delivery_id is not None else None
        if seen is not None:
            return Repeat(seen=seen, seen_final=original_final(rows, draft), unstarted=unstarted(rows, draft))
        return Repeat(blocking=blocking_reason(rows, draft, done_blocks=not self._policy.rerun_done_on_change),
                      unstarted=unstarted(rows, draft))

    def decide(self, draft: ReceiptDraft, capacity: CapacityContext | None = None) -> IntakeDecision:
        for attempt in range(_MAX_RACE_RETRIES):
            try:
                return self._decide_once(draft, capacity)
            except (IntegrityError, OperationalError) as exc:
                if attempt == _MAX_RACE_RETRIES - 1 or (
                        isinstance(exc, OperationalError) and not _rolled_back_by_the_server(exc)):
                    raise
        raise AssertionError("unreachable")

    def decide_many(self, drafts: list[ReceiptDraft]) -> list[IntakeDecision | Exception]:
        """:meth:`decide` (no capacity context) for each of ``drafts``, answers in the same order. The
        plain ones (``ledger/_plain_decide.py``) are written in one transaction (group commit); if it
        fails, nothing of it was written and each is decided on its own, as are the others. An item's
        answer is the exception its own decision raised (the ledger is unreachable: that caller's 503)."""
        answers: list[IntakeDecision | Exception | None] = [None] * len(drafts)
        plain = [i for i, d in enumerate(drafts) if is_plain(d, False, None)]
        if len(plain) > 1:
            rows = [_receipt_row(drafts[i], new_id(), None, self._policy.version) for i in plain]
            try:
                written = decide_plain_many(self._engine, [(drafts[i], row) for i, row in zip(plain, rows, strict=True)],
                                            self._already_claimed_unknown)
            except Exception:  # noqa: BLE001 - re-raised below, to its own draft's requester only
                # Rolled back whole: decided one by one below, each with decide's own retries. Any
                # failure (a DataError of one draft's value too), not only the race errors: one
                # draft's failure must not become every requester of the batch's answer.
                pass
            else:
                for i, row, lost in zip(plain, rows, written, strict=True):
                    answers[i] = lost or _decision_from_row(row)
        out: list[IntakeDecision | Exception] = []
        for draft, answer in zip(drafts, answers, strict=True):
            if answer is None:
                try:
                    answer = self.decide(draft)
                except Exception as exc:  # noqa: BLE001 - handed to that draft's requester, not swallowed
                    answer = exc
            out.append(answer)
        return out

    def _decide_once(self, draft: ReceiptDraft, capacity: CapacityContext | None) -> IntakeDecision:
        receipt_id = new_id()
        generation = None
        resume = capacity.resume_item if capacity is not None else None
        if capacity is not None and draft.concurrency_key is None:
            draft = replace(draft, concurrency_key=capacity.request.concurrency_key)
        if is_plain(draft, capacity is not None, resume):  # claim + receipt only: ledger/_plain_decide.py
            row = _receipt_row(draft, receipt_id, None, self._policy.version)
            return decide_plain(self._engine, draft, row, self._already_claimed_unknown) or _decision_from_row(row)
        with Session(self._engine, expire_on_commit=False) as s, s.begin():
            if draft.outcome == Outcome.ACCEPT and draft.ordered_versions and draft.work_key:
                # First, before any row lock (ledger/_version_order_lock.py gives the order): two accepts
                # of two versions of this key decide one after the other, so the newer-version check
                # below (_newer_taken) sees a version the other one accepted.
                lock_version_order(s, draft.work_key)
            if resume is not None:
                changed = self._resumed_item_changed(s, resume, capacity.resume_receipt)
                if changed is not None:
                    return changed  # nothing written: the next pass decides the item as it is now
            if draft.outcome == Outcome.ACCEPT and draft.work_key:
                # Here, not only before the freshness read: a kill committed during the read
                # (seconds) must not become an admission. Before the claim: a kill claims nothing.
                kill = kill_in_force(s, draft.work_key, draft.tenant or None)
                if kill is not None:
                    draft = killed_instead(draft, kill)
            if is_killed(draft):
                return self._killed(s, draft, resume)
            if (resume is None and draft.delivery_id is not None and not leaves_delivery_unclaimed(draft)
                    and not self._claim_delivery(s, draft, receipt_id)):
                # Lost a race to the same delivery id or body: answered from the winner, no row.
                return original_answer(find_repeat(s.connection(), draft), draft) \
                    or self._already_claimed_unknown(draft)
            elif draft.outcome == Outcome.ACCEPT:
                # Locked (FOR UPDATE on PostgreSQL; SQLite's BEGIN IMMEDIATE already serializes):
                # two replicas re-admitting one ended version decide one after the other.
                existing = _locked_version(s, draft)
                draft = self._policy_rerun(s, draft, existing)
                blocked = self._blocking_reason(s, draft, existing)
                limited = readmission_refusal(draft, existing.readmissions, self._max_readmissions) \
                    if existing is not None else None
                older = newer_version_refusal(draft, *self._newer_taken(s, draft))
                if blocked is not None:
                    draft = duplicate_work(draft, blocked)
                elif limited is not None:
                    draft = limited
                elif older is not None:
                    draft = older
                else:
                    placed = apply_capacity(s, draft, capacity, receipt_id) if capacity is not None else None
                    if placed is not None and placed.requeued:
                        return _decision_from_row(_receipt_row(placed.draft, self._item_receipt(s, resume),
                                                               policy_version=self._policy.version))
                    draft = placed.draft if placed is not None else draft
                    if draft.outcome == Outcome.ACCEPT:
                        generation = self._admit_version(s, draft, receipt_id, existing)
                        stamp_generation(s, draft.work_key, generation)
                        if placed is not None and placed.superseded_item:
                            _deferred.finish(s, placed.superseded_item, "superseded", receipt_id)
            elif draft.outcome == Outcome.DEFER and resume is None and capacity is not None and draft.work_key:
                # The source could not be read: verified means durable, so the delivery is queued.
                existing = s.get(WorkVersion, (draft.work_key, draft.input_version)) if draft.input_version else None
                draft = queue_unread(s, draft, capacity, receipt_id, self._blocking_reason(s, draft, existing))
            elif draft.reason == Reason.TARGET_CLOSED and draft.work_key:
                # Tombstone: the domain was reset; a later reopen may admit a finished version again.
                s.execute(update(WorkItem).where(WorkItem.work_key == draft.work_key).values(reset_at=utcnow()))
            if resume is not None and draft.outcome != Outcome.DEFER:
                _deferred.finish(s, resume, "admitted" if draft.outcome == Outcome.ACCEPT else "dropped", receipt_id,
                                 None if draft.outcome == Outcome.ACCEPT else draft.reason)
            row = _receipt_row(draft, receipt_id, generation, self._policy.version)
            INSERT_RECEIPT.run(s, row)
        return _decision_from_row(row)

    @staticmethod
    def _newer_taken(s: Session, draft: ReceiptDraft) -> tuple[str | None, str | None]:
        """The newest version of the draft's work key above its own that is accepted, admitted or done,
        and its status; only for a task whose versions order as strings (``draft.ordered_versions``)."""
        if not draft.ordered_versions or draft.override or not draft.input_version:
            return None, None
        row = s.execute(select(WorkVersion.input_version, WorkVersion.status).where(
            WorkVersion.work_key == draft.work_key, WorkVersion.input_version > draft.input_version,
            WorkVersion.status.in_([*IN_FLIGHT_STATUSES, str(RunStatus.DONE)]))
            .order_by(WorkVersion.input_version.desc()).limit(1)).first()
        return (row[0], row[1]) if row is not None else (None, None)

    @staticmethod
    def _resumed_item_changed(s: Session, item_id: str, expected_receipt: str | None) -> IntakeDecision | None:
        """Lock the deferred item; if it left the queue or a newer version replaced its payload
        since the dispatcher read it, answer a no-op defer instead of deciding a stale payload."""
        item = s.get(DeferredItem, item_id, with_for_update=True)
        if item is not None and item.status == "waiting" and (expected_receipt in (None, item.receipt_id)):
            return None
        what = "left the queue" if item is None or item.status != "waiting" else "was replaced by a newer version"
        return IntakeDecision(Outcome.DEFER, stale_resume_reason(), f"deferred item {item_id} {what} while it was decided",
                              receipt_id=item.receipt_id if item is not None else "", work_key=item.work_key
                              if item is not None else None, input_version=item.input_version if item else None)

    def _killed(self, s: Session, draft: ReceiptDraft, resume: str | None) -> IntakeDecision:
        """A ``killed`` reject: a receipt only. No delivery claim (a redelivery after the unkill is
        decided afresh); a deferred item stays queued and gets one receipt per kill."""
        receipt_id = new_id() if resume is None else held_receipt_id(resume, draft.message)
        row = _receipt_row(draft, receipt_id, policy_version=self._policy.version)
        s.execute(dialect_insert(s, Receipt).values(**row).on_conflict_do_nothing())
        return _decision_from_row(row)

    @staticmethod
    def _item_receipt(s: Session, item_id: str) -> str:
        return s.get(DeferredItem, item_id).receipt_id

    def _policy_rerun(self, s: Session, draft: ReceiptDraft, existing: WorkVersion | None) -> ReceiptDraft:
        """A ``done`` version decided under another policy version is admitted again only when the
        policy says so (``intake.rerun_done_on_policy_change``): the draft then carries the reason as
        its override (recorded on the receipt; the run's side effects are kept apart from the first's)."""
        if existing is None or existing.status != RunStatus.DONE or draft.override:
            return draft
        done_under = s.execute(select(_RECEIPTS.c.policy_version).where(_RECEIPTS.c.id == existing.receipt_id)).scalar()
        if not self._policy.reruns_done(done_under):
            return draft
        why = f"policy-rerun: done under policy {done_under}, now {self._policy.version}"
        return replace(draft, override=why[:256])

    @staticmethod
    def _blocking_reason(s: Session, draft: ReceiptDraft, existing: WorkVersion | None) -> str | None:
        """Why an earlier admission of this version blocks this one, or None.

        In-flight versions (accepted, admitted) always block. A ``done`` version blocks unless
        an authorized actor overrode — a tombstone (the pull request closed, then reopened) does
        not unblock it: the same head was already reviewed. A ``cancelled`` one blocks automatic
        triggers (webhooks, scans, goals) until the work item is reset after it (tombstone), but
        never a manual trigger: a person stopped it, and a person's deliberate request runs it again."""
        if existing is None or existing.status not in BLOCKING_STATUSES:
            return None
        what = f"{draft.work_key}@{draft.input_version} is already {existing.status} (receipt {existing.receipt_id})"
        if existing.status in IN_FLIGHT_STATUSES:
            return what
        if existing.status == RunStatus.DONE:
            return None if draft.override else what
        reset_at = as_utc(s.execute(select(WorkItem.reset_at).where(WorkItem.work_key == draft.work_key)).scalar())
        if reset_at is not None and as_utc(existing.updated_at) < reset_at:
            return None
        return None if draft.trigger_kind == TriggerKind.MANUAL else f"{what}; only a manual trigger runs it again"

    @staticmethod
    def _claim_delivery(s: Session, draft: ReceiptDraft, receipt_id: str) -> bool:
        """Claim the delivery id and the body digest together; False if either was taken (any
        unique key: the primary key or the per-source digest)."""
        return CLAIM_DELIVERY.first(s, {
            "source": draft.source, "delivery_id": draft.delivery_id, "received_at": draft.received_at,
            "receipt_id": receipt_id, "body_digest": draft.body_digest}) is not None

    @staticmethod
    def _already_claimed_unknown(draft: ReceiptDraft) -> IntakeDecision:
        """The claim failed but the winner's row is not visible (cannot happen under either
        ledger's isolation; answered as a duplicate rather than written)."""
        reason, message = repeat_reason(draft, same_body=False)
        return IntakeDecision(Outcome.REJECT, str(reason), message, receipt_id="")

    @staticmethod
    def _admit_version(s: Session, draft: ReceiptDraft, receipt_id: str, existing: WorkVersion | None) -> int:
        now = utcnow()
        [(generation,)] = UPSERT_ITEM.rows(s, {
            "wk": draft.work_key, "tenant": draft.tenant or "", "target": draft.target_id or "",
            "ver": draft.input_version, "now": now})
        generation = int(generation)
        if existing is None:
            INSERT_VERSION.run(s, {
                "work_key": draft.work_key, "input_version": draft.input_version, "generation": generation,
                "status": "accepted", "receipt_id": receipt_id, "workflow_id": None, "run_id": None, "result": None,
                "updated_at": now, "readmissions": 0})
        else:
            if existing.status != RunStatus.KILLED:  # a kill is an operator's stop, not a runaway re-run
                existing.readmissions = (existing.readmissions or 0) + 1
            existing.generation, existing.status, existing.receipt_id = generation, "accepted", receipt_id
            existing.workflow_id = existing.run_id = existing.result = None
            existing.updated_at = now
            s.add(existing)
        s.flush()
        return generation

    def mark_admitted(self, decision: IntakeDecision, workflow_id: str, run_id: str | None) -> IntakeDecision:
        """Record one started run: :meth:`mark_admitted_many` with one mark."""
        return self.mark_admitted_many([(decision, workflow_id, run_id)])[0]

    def mark_admitted_many(self, marks: Sequence[tuple[IntakeDecision, str, str | None]]) -> list[IntakeDecision]:
        """Record started runs, all in one transaction (the group commit of ``intake/admitted_marks.py``);
        returns the decisions marked, in the order given.

        Rows are locked in the order the run's own end takes them (``WorkStore.record_outcome``: version,
        receipt, work item): in the opposite order a run that ended at once deadlocked with this, and
        PostgreSQL's victim was this transaction — a decided, admitted delivery answered 503. With many
        marks, all their versions are updated first, then their receipts, then their work items, each
        group in (work key, version) order: a run's end, which holds one key's rows in the same order,
        can never hold a row this transaction waits for while waiting on one it holds, and two replicas'
        batches take shared rows (one work key's item) in one global order. The run's status and run id,
        if it already recorded its end, are kept; the workflow id is written either way (the run's end
        does not know it)."""
        if not marks:
            return []
        now = utcnow()
        ordered = sorted(marks, key=lambda m: (m[0].work_key or "", m[0].input_version or "", m[0].receipt_id))
        with self._engine.begin() as conn:
            MARK_VERSIONS.run_many(conn, [{"wk": d.work_key, "ver": d.input_version, "gen": d.generation, "wf": wf,
                                           "run": run, "now": now} for d, wf, run in ordered])
            MARK_RECEIPTS.run_many(conn, [{"rid": d.receipt_id, "wf": wf, "run": run, "wk": d.work_key,
                                           "ver": d.input_version} for d, wf, run in ordered])
            MARK_ITEMS.run_many(conn, [{"wk": d.work_key, "gen": d.generation, "wf": wf, "now": now}
                                       for d, wf, run in ordered])
        return [replace(d, workflow_id=wf, run_id=run) for d, wf, run in marks]

    def pending_admissions(self, older_than_seconds: float, limit: int = 100) -> list[PendingAdmission]:
        """Accepted work versions never admitted, whose receipt is older than the grace period, that
        no kill in force covers; the least recently tried first. A failed relay attempt moves its
        version to the back (:meth:`note_relay_failure`), and kill-held ones are not read at all: a
        window of ``limit`` is never filled for good by items that fail every time or that a kill
        holds, while another tenant's accepted work waits behind them."""
        cutoff = utcnow() - timedelta(seconds=older_than_seconds)
        query = (_PENDING.where(WorkVersion.status == "accepted", _RECEIPTS.c.created_at < cutoff,
                                ~_KILL_COVERS_PENDING)
                 .order_by(col(WorkVersion.updated_at), _RECEIPTS.c.created_at).limit(limit))
        with self._engine.connect() as conn:
            return [_pending(row) for row in conn.execute(query).mappings().all()]

    def note_relay_failure(self, pending: PendingAdmission) -> None:
        """A relay attempt failed for this version: stamp it so the next pass tries the others first."""
        with self._engine.begin() as conn:
            conn.execute(update(WorkVersion).where(
                col(WorkVersion.work_key) == pending.draft.work_key,
                col(WorkVersion.input_version) == pending.draft.input_version,
                col(WorkVersion.generation) == pending.generation, col(WorkVersion.status) == "accepted")
                .values(updated_at=utcnow()))

    def pending_admission(self, work_key: str, input_version: str) -> PendingAdmission | None:
        """The version's admission if it is still accepted and never started (no grace period: the
        caller knows no request of its own is starting it), else None."""
        query = _PENDING.where(WorkVersion.work_key == work_key, WorkVersion.input_version == input_version,
                               WorkVersion.status == "accepted", col(WorkVersion.workflow_id).is_(None))
        with self._engine.connect() as conn:
            row = conn.execute(query).mappings().first()
        return None if row is None else _pending(row)

    def prune_deliveries(self, window_hours: float) -> int:
        """Forget delivery ids older than the dedupe window; returns how many were removed."""
        cutoff = utcnow() - timedelta(hours=window_hours)
        with self._engine.begin() as conn:
            return conn.execute(_DELIVERIES.delete().where(_DELIVERIES.c.received_at < cutoff)).rowcount

    def mark_admission_failed(self, decision: IntakeDecision, error: str) -> IntakeDecision:
        message = f"{decision.message}; admission pending (start failed: {error[:300]})"
        with Session(self._engine) as s, s.begin():
            s.execute(update(Receipt).where(Receipt.id == decision.receipt_id).values(message=message))
        return replace(decision, message=message)


_PENDING = (select(_RECEIPTS, col(WorkVersion.generation).label("version_generation"))
            .join(WorkVersion, WorkVersion.receipt_id == _RECEIPTS.c.id))
"""An accept receipt with its version's generation (the outbox relay's and a repeat's start read it)."""

_EARLIER_REJECT_OF_ID = (select(_RECEIPTS.c.id, _RECEIPTS.c.delivery_id, _RECEIPTS.c.created_at)
                         .where(_RECEIPTS.c.source == bindparam("p_source"),
                                _RECEIPTS.c.delivery_id == bindparam("p_delivery_id"),
                                _RECEIPTS.c.outcome == str(Outcome.REJECT))
                         .order_by(_RECEIPTS.c.created_at).limit(1))
"""The first reject receipt of this delivery id from this source (``ix_receipts_delivery``)."""
_EARLIER_REJECT_OF_DIGEST = (select(_RECEIPTS.c.id, _RECEIPTS.c.delivery_id, _RECEIPTS.c.created_at)
                             .where(_RECEIPTS.c.source == bindparam("p_source"),
                                    _RECEIPTS.c.reject_digest == bindparam("p_digest"))
                             .order_by(_RECEIPTS.c.created_at).limit(1))
"""The first reject receipt of this content from this source (``ix_receipts_reject_digest``; only
rejects carry a digest)."""

_KILL_COVERS_PENDING = exists().where(in_force_covering(col(WorkVersion.work_key), _RECEIPTS.c.tenant))
"""A kill in force covers the pending version (the condition of :data:`ledger._kill_rows.COVERING`)."""


def _pending(row: Any) -> PendingAdmission:
    return PendingAdmission(row["id"], ReceiptDraft(**{k: row[k] for k in _DRAFT_FIELDS}), row["version_generation"])


def _locked_version(s: Session, draft: ReceiptDraft) -> WorkVersion | None:
    """The accept's work version, locked (FOR UPDATE on PostgreSQL; SQLite's BEGIN IMMEDIATE already
    serializes): one Core statement, and the entity loaded only when the row exists (a re-admission)."""
    if LOCK_VERSION.first(s, {"wk": draft.work_key, "ver": draft.input_version}) is None:
        return None
    return s.get(WorkVersion, (draft.work_key, draft.input_version), with_for_update=True)
