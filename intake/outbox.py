"""The outbox relay: admit work that was accepted and recorded but never started.

Intake commits the accept receipt and the work version (status ``accepted``) before it
calls signal-with-start. If that call fails, or the process dies in between, the item
is left ``accepted``. The relay finds such items older than a grace period (so it does
not race a request still in flight), rebuilds the admission from the receipt — the
receipt holds the whole identity bundle — and admits it. Signal-with-start is keyed by
the work key and the workflow ignores a generation it has already seen, so relaying an
item that was in fact admitted is harmless.

A kill in force covering an item leaves it in the outbox, ``accepted``, unstarted: the store
does not read it while the kill holds (nor counts it against the relay's window), and ``kills`` is
asked again right before the start; the relay that runs after the unkill starts it. A version
whose start fails goes behind the others (``note_relay_failure``): least recently tried first.

The relay is the backstop, on a schedule. A repeat of the delivery (or another delivery of the
version) usually comes first and starts the item at once (``intake/starts_in_progress.py``).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from intake.decision import IntakeDecision, Outcome
from intake.envelope import Envelope, PullRequestRef, TriggerKind, WorkCandidate
from intake.kill_gate import KillLookup
from intake.ports import Admission, Admitter, IntakeStore
from intake.receipts import ReceiptDraft

log = logging.getLogger("sluicegate.outbox")


@dataclass(frozen=True)
class PendingAdmission:
    """An accepted receipt whose run was never started."""

    receipt_id: str
    draft: ReceiptDraft
    generation: int


@dataclass
class RelayReport:
    admitted: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)
    """Left in the outbox: a kill covers them."""


def parse_target(target_id: str) -> PullRequestRef:
    """``owner/repo#number`` → :class:`PullRequestRef`."""
    path, _, number = target_id.rpartition("#")
    owner, _, repo = path.partition("/")
    if not owner or not repo or not number.isdigit():
        raise ValueError(f"not a pull request target id: {target_id!r}")
    return PullRequestRef(owner, repo, int(number))


def admission_from(pending: PendingAdmission) -> Admission:
    d = pending.draft
    if d.work_key is None or d.target_id is None:  # an accepted receipt always names its work
        raise ValueError(f"receipt {pending.receipt_id} names no work key or target")
    envelope = Envelope(id=d.delivery_id or pending.receipt_id, source=d.source, type=d.event_type or "relay",
                        subject=d.subject, time=d.emitted_at, received_at=d.received_at,
                        trigger_kind=TriggerKind(d.trigger_kind), tenant=d.tenant or "", actor=d.actor,
                        override=d.override)  # a relayed forced re-run still posts its own review
    candidate = WorkCandidate(d.work_key, parse_target(d.target_id), d.input_version, d.tenant or "")
    decision = IntakeDecision(Outcome.ACCEPT, d.reason, d.message, pending.receipt_id, work_key=d.work_key,
                              input_version=d.input_version, generation=pending.generation,
                              policy_version=d.policy_version, override=d.override)  # the run re-checks an older policy
    return Admission(decision, envelope, candidate)


async def relay(store: IntakeStore, pending: list[PendingAdmission], admitter: Admitter,
                kills: KillLookup | None = None) -> RelayReport:
    """Admit every pending item not covered by a kill in force; one failure does not stop the others."""
    report = RelayReport()
    for item in pending:
        key = f"{item.draft.work_key}@{item.draft.input_version}"
        if kills is not None and item.draft.work_key is not None and await asyncio.to_thread(
                kills.active_for, item.draft.work_key, item.draft.tenant or None) is not None:
            log.info("relay holds %s: a kill covers it", key, extra={"work_key": item.draft.work_key})
            report.held.append(key)
            continue
        try:
            admission = admission_from(item)
            workflow_id, run_id = await admitter.admit(admission)
        except Exception as exc:  # noqa: BLE001 - reported, retried on the next relay
            log.error("relay could not admit %s: %r", key, exc, extra={"work_key": item.draft.work_key})
            report.failed.append(key)
            await _to_the_back(store, item, key)
            continue
        await asyncio.to_thread(store.mark_admitted, admission.decision, workflow_id, run_id)
        log.info("relayed %s into %s", key, workflow_id, extra={"work_key": item.draft.work_key,
                                                                 "workflow_id": workflow_id, "run_id": run_id})
        report.admitted.append(key)
    return report


async def _to_the_back(store: IntakeStore, item: PendingAdmission, key: str) -> None:
    """Move a version whose start failed behind the others, so that versions failing on every pass
    (a configuration error, say) never fill the relay's window for good."""
    try:
        await asyncio.to_thread(store.note_relay_failure, item)
    except Exception as exc:  # noqa: BLE001 - the ledger may be what failed; the version stays accepted
        log.warning("relay could not note the failed start of %s: %r", key, exc,
                    extra={"work_key": item.draft.work_key})
