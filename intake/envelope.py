"""The normalized envelope every trigger becomes, and the work candidate it names.

Envelope fields follow CloudEvents attributes (id, source, type, subject, time) plus
``received_at``, the trigger family and, for manual triggers, the actor and an admin's
override. Privileged fields are typed and set only by authenticated code paths; nothing here
is copied from a payload. The candidate
is the domain identity resolved from it: work key, target, input version (``None`` when
the trigger does not carry one — a manual run then takes the source's current version).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any


class TriggerKind(StrEnum):
    EVENT = "event"
    SCHEDULE = "schedule"
    GOAL = "goal"
    MANUAL = "manual"


@dataclass(frozen=True)
class Envelope:
    id: str
    """Delivery id, unique per source (``X-GitHub-Delivery`` for GitHub)."""
    source: str
    """Configured source name, e.g. ``github`` or ``manual``."""
    type: str
    """Event type, e.g. ``pull_request.synchronize``."""
    subject: str | None
    time: datetime | None
    """When the source says the event happened (CloudEvents ``time``)."""
    received_at: datetime
    trigger_kind: TriggerKind
    tenant: str
    actor: str | None = None
    override: str | None = None
    """A check an authenticated admin actor asked to relax, and why (``rerun-done: <reason>``).

    Privilege comes only from authentication: only the manual trigger endpoint sets this, after
    checking the actor's bearer token and role. No parser copies it from a payload, and
    ``data`` (below) never carries a sender's payload, so no field of any delivery can set it."""
    body_digest: str | None = None
    """Webhooks: sha256 of the signed content less the delivery id (``VerifiedDelivery``); the
    ledger refuses the same digest from the same source under another delivery id."""
    data: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """Notes Sluicegate itself attaches to the trigger (the manual trigger's ``reason``); never the
    sender's payload: everything intake needs from a payload is in the typed fields and the candidate."""


@dataclass(frozen=True)
class PullRequestRef:
    owner: str
    repo: str
    number: int

    @property
    def target_id(self) -> str:
        return f"{self.owner}/{self.repo}#{self.number}"


@dataclass(frozen=True)
class WorkCandidate:
    work_key: str
    target: PullRequestRef
    input_version: str | None
    tenant: str
    draft: bool = False
    title: str = field(default="", compare=False)
    """Display only (the Temporal UI's summary and memo): never part of a decision or a key."""
    content_digest: str = ""
    """The target's content as the event saw it (a task whose version is a moment: triage's
    ``sha256`` of the issue's title and body, ``sluicegate.forge.issue_digest``), never the text;
    ``""`` = unknown (a manual trigger, a review): the task's freshness rule then compares versions only."""

    @property
    def task(self) -> str:
        """The registered task this work is for: the work key's suffix (``review``, ``triage``)."""
        return self.work_key.rpartition(":")[2]
