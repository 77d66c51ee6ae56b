"""What intake needs from the outside world, as protocols.

Intake itself imports neither Temporal nor a database: the ledger store, the
authoritative-source reader and the admitter are injected, so the whole admission
pipeline is tested with real adapters or swapped for another engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Protocol, Sequence

from intake.capacity.context import CapacityContext as CapacityContext  # noqa: F401 - re-exported: the port's argument
from intake.decision import IntakeDecision, Reason
from intake.envelope import Envelope, PullRequestRef, WorkCandidate
from intake.freshness import TargetSnapshot, assess_freshness
from intake.receipts import ReceiptDraft
from intake.repeats import Repeat
from sluicegate.errors import SluicegateError

if TYPE_CHECKING:  # the outbox imports this module: a run-time import would be a cycle
    from intake.outbox import PendingAdmission


class SourceUnavailable(SluicegateError):
    """The authoritative source could not be read (timeout, 5xx, rate limit).

    ``permanent`` marks an answer that trying again cannot change by itself (bad credentials, a
    forbidden repository, a malformed request): a queued item read that way dead-letters after the
    dispatcher's failure limit instead of waiting forever."""

    def __init__(self, message: str, retry_after: float | None = None, permanent: bool = False) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.permanent = permanent


class TargetReader(Protocol):
    async def read(self, ref: PullRequestRef, tenant: str | None = None) -> TargetSnapshot:
        """Current state of the target, read with ``tenant``'s credentials; raises :class:`SourceUnavailable`."""
        ...


class IntakeStore(Protocol):
    """The ledger side of intake. Methods are synchronous; the service runs them in a thread."""

    def record(self, draft: ReceiptDraft) -> IntakeDecision:
        """Write a receipt only (no delivery record): bad signatures, defers."""
        ...

    def reject_if_delivery_seen(self, draft: ReceiptDraft) -> IntakeDecision | None:
        """If the delivery id was already decided, write a duplicate-delivery receipt."""
        ...

    def find_repeat(self, draft: ReceiptDraft) -> Repeat:
        """Read-only, before any forge read: the original's decision for a repeated delivery, else
        why the (work key, version) is already admitted, running, queued or done (``intake.repeats``)."""
        ...

    def decide(self, draft: ReceiptDraft, capacity: CapacityContext | None = None) -> IntakeDecision:
        """Record the delivery and the decision atomically; an accept also runs work dedupe,
        takes capacity and bumps the work key's generation. May turn the draft into a
        duplicate reject or a capacity defer (queued durably). A defer draft with a capacity
        context (the source could not be read) is queued durably, Block ``source-unavailable``."""
        ...

    def mark_admitted(self, decision: IntakeDecision, workflow_id: str, run_id: str | None) -> IntakeDecision:
        """Record the started run (workflow id, run id) on the version, its receipt and its work item."""
        ...

    def mark_admitted_many(self, marks: Sequence[tuple[IntakeDecision, str, str | None]]) -> list[IntakeDecision]:
        """:meth:`mark_admitted` for each (decision, workflow id, run id), in one transaction."""
        ...

    def mark_admission_failed(self, decision: IntakeDecision, error: str) -> IntakeDecision:
        """Note on the receipt that the run is not started yet (the item stays ``accepted``)."""
        ...

    def note_relay_failure(self, pending: PendingAdmission) -> None:
        """A relay attempt to start this version failed: the relay tries the others first next time."""
        ...

    def pending_admission(self, work_key: str, input_version: str) -> PendingAdmission | None:
        """The version's admission (its accept receipt, generation) if it is ``accepted`` with no run, else None."""
        ...


@dataclass(frozen=True)
class Admission:
    """An accepted item, ready to be started as a run."""

    decision: IntakeDecision
    envelope: Envelope
    candidate: WorkCandidate


class Admitter(Protocol):
    async def admit(self, admission: Admission) -> tuple[str, str | None]:
        """Start or signal the run for the work key; returns (workflow id, run id)."""
        ...


FreshnessRule = Callable[[str | None, TargetSnapshot, str], Reason | None]
"""A task's freshness rule: (the event's version, the source's snapshot, the event's content digest
— ``WorkCandidate.content_digest``, ``""`` when unknown) -> a reject/defer reason or None."""
TaskPolicyRule = Callable[[WorkCandidate, TargetSnapshot], str | None]
"""A task's own admission rule (beyond :class:`intake.policy.Policy`): ``None`` permits, else ``policy:<rule>``."""


@dataclass(frozen=True)
class TaskIntake:
    """What intake needs to decide one task's work: injected by the wiring from ``tasks.registry``
    (intake never imports ``tasks``). ``reader`` is the task's own (shared-reads) reader, so a pull
    request's and an issue's read of one number never share a flight or a snapshot."""

    reader: TargetReader
    freshness: FreshnessRule = assess_freshness
    policy: TaskPolicyRule | None = None
    ordered_versions: bool = False
    """The task's versions order as strings (``tasks.spec.TaskSpec.ordered_versions``)."""
