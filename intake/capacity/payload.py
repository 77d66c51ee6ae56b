"""What the deferred queue stores to decide an item again later: its envelope and candidate.

The payload is written by intake itself, never by a sender. A candidate's ``content_digest`` (a
digest, never the text) is kept so a re-decision judges freshness as the first decision did. ``override`` is its own key (the
envelope's typed field, set only by an authenticated admin's manual trigger); payloads queued
before that key existed kept a manual trigger's override under ``data`` — it is honoured only
for a manual trigger with an actor, the one path that could have written it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from intake.envelope import Envelope, PullRequestRef, TriggerKind, WorkCandidate
from intake.identity import REVIEW_TASK, review_candidate, work_key_for


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _digest(value: Any) -> str:
    """A stored content digest (sha256 hex), or ``""`` (unknown) for anything else."""
    if isinstance(value, str) and len(value) == 64 and all(ch in "0123456789abcdef" for ch in value):
        return value
    return ""


def to_payload(envelope: Envelope, candidate: WorkCandidate) -> dict[str, Any]:
    return {
        "envelope": {"id": envelope.id, "source": envelope.source, "type": envelope.type,
                     "subject": envelope.subject, "time": _iso(envelope.time),
                     "received_at": _iso(envelope.received_at), "trigger_kind": str(envelope.trigger_kind),
                     "tenant": envelope.tenant, "actor": envelope.actor, "override": envelope.override,
                     "data": envelope.data},
        "candidate": {"work_key": candidate.work_key, "owner": candidate.target.owner,
                      "repo": candidate.target.repo, "number": candidate.target.number,
                      "input_version": candidate.input_version, "tenant": candidate.tenant,
                      "draft": candidate.draft, "content_digest": candidate.content_digest},
    }


def from_payload(payload: dict[str, Any]) -> tuple[Envelope, WorkCandidate]:
    """Raises KeyError / ValueError / TypeError on a payload that is not one of ours (poison)."""
    e, c = payload["envelope"], payload["candidate"]
    kind, data = TriggerKind(e["trigger_kind"]), dict(e.get("data") or {})
    override = e.get("override")
    if "override" not in e and kind == TriggerKind.MANUAL and e.get("actor"):
        override = data.get("override")  # queued before the typed field existed
    envelope = Envelope(id=e["id"], source=e["source"], type=e["type"], subject=e.get("subject"),
                        time=datetime.fromisoformat(e["time"]) if e.get("time") else None,
                        received_at=datetime.fromisoformat(e["received_at"]),
                        trigger_kind=kind, tenant=e["tenant"], actor=e.get("actor"), override=override,
                        data={k: v for k, v in data.items() if k != "override"})
    # The key is rebuilt from tenant and target, not read back: an item queued before the tenancy
    # upgrade (its stored key has no tenant) is decided under today's key like any other.
    # The task is the stored key's suffix (a key without one, from before the registry, is a review).
    ref, task = PullRequestRef(c["owner"], c["repo"], int(c["number"])), str(c.get("work_key") or "").rpartition(":")[2]
    if not task or task == REVIEW_TASK:
        candidate = review_candidate(c["tenant"], ref, c.get("input_version"), bool(c.get("draft")))
    else:
        candidate = WorkCandidate(work_key_for(c["tenant"], ref, task), ref, c.get("input_version"), c["tenant"],
                                  content_digest=_digest(c.get("content_digest")))
    return envelope, candidate


def emitted_later(queued: dict[str, Any], incoming: dict[str, Any]) -> bool:
    """Was the queued payload's event emitted strictly after the incoming one's (both known)?

    Then the queued one stays when the two merge into the key's one waiting item: an event that
    arrives late (reordered, or queued unread during an outage and not yet checked against the
    source) must not replace a newer one, which would be dropped as stale when re-checked."""
    try:
        mine, theirs = queued["envelope"].get("time"), incoming["envelope"].get("time")
        return bool(mine and theirs) and datetime.fromisoformat(mine) > datetime.fromisoformat(theirs)
    except (KeyError, TypeError, ValueError, AttributeError):
        return False
