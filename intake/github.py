"""GitHub ``pull_request`` webhooks → envelope + work candidate.

Checked in this order, so the cheapest and most security-relevant check runs first:
delivery id and event headers; ``X-Hub-Signature-256`` verified in constant time by
gidgethub against each configured secret in turn (rotation: any one verifying is enough;
SHA-1 signatures are refused); content type; JSON body; payload shape (pydantic). A
failure raises :class:`InvalidDelivery` carrying the delivery id when one was sent, so the
API can still write a reject receipt. Signature failures never record the delivery id as
seen: a forged request must not be able to burn a genuine delivery's id.

Values that end up in the ledger are bounded here (action, head sha, owner/repo), because
PostgreSQL refuses an over-long column *after* the decision was taken, as a 500.
"""

from __future__ import annotations

from datetime import datetime
from typing import Mapping

from gidgethub import ValidationFailure
from gidgethub.sansio import validate_event
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from intake.decision import Reason
from intake.envelope import Envelope, PullRequestRef, TriggerKind
from intake.errors import InvalidDelivery
from intake.identity import review_candidate
from intake.sources import ParsedDelivery
from intake.sources._common import (MAX_EVENT_TYPE, MAX_JSON_DEPTH_ERROR, decode_json, delivery_id_from, header,
                                    identity_text, media_type, utc)

# "closed" is routed through freshness on purpose: the re-read says target-closed, and that
# decision tombstones the work item so a later reopen can admit a finished version again.
ACTIONABLE_ACTIONS = frozenset({"opened", "reopened", "synchronize", "ready_for_review", "closed"})
GithubDelivery = ParsedDelivery
"""The common parsed-delivery type, under its first name."""
__all__ = ["ACTIONABLE_ACTIONS", "GithubDelivery", "MAX_JSON_DEPTH_ERROR", "PullRequestEvent",
           "parse_github_delivery"]


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _Repo(_Lenient):
    full_name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$")


class _Ref(_Lenient):
    sha: str = Field(pattern=r"^[\x21-\x7e]{1,128}$")
    ref: str | None = None


class _PullRequest(_Lenient):
    number: int = Field(gt=0, lt=2**63)
    state: str
    head: _Ref
    draft: bool = False
    updated_at: datetime | None = None


class PullRequestEvent(_Lenient):
    """The part of GitHub's ``pull_request`` payload Sluicegate relies on."""

    action: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    number: int
    pull_request: _PullRequest
    repository: _Repo


def parse_github_delivery(
    headers: Mapping[str, str],
    body: bytes,
    *,
    source: str,
    tenant: str,
    secrets: list[str],
    received_at: datetime,
) -> ParsedDelivery:
    """Verify and normalize one delivery. ``headers`` must have lower-case keys."""
    delivery_id = delivery_id_from(headers, "x-github-delivery")
    event = identity_text(header(headers, "x-github-event"), MAX_EVENT_TYPE)
    if delivery_id is None:
        raise InvalidDelivery(Reason.BAD_INPUT, "missing, oversize or garbled X-GitHub-Delivery header", 400, None,
                              event)
    if event is None:
        raise InvalidDelivery(Reason.BAD_INPUT, "missing, oversize or garbled X-GitHub-Event header", 400,
                              delivery_id)
    _verify_signature(headers, body, secrets, delivery_id, event)
    if media_type(headers) != "application/json":
        raise InvalidDelivery(Reason.BAD_INPUT,
                              f"content type must be application/json, got {media_type(headers)[:100]!r}",
                              415, delivery_id, event)
    data = decode_json(body, delivery_id, event)
    base = dict(id=delivery_id, source=source, received_at=received_at, trigger_kind=TriggerKind.EVENT,
                tenant=tenant, data=data)
    if event == "ping":
        return ParsedDelivery(Envelope(type="ping", subject=None, time=None, **base), None)
    if event != "pull_request":
        raise InvalidDelivery(Reason.UNSUPPORTED_EVENT, f"event type {event!r} is not handled", 422,
                              delivery_id, event)
    try:
        parsed = PullRequestEvent.model_validate(data)
    except ValidationError as exc:
        fields = ", ".join(".".join(str(p) for p in e["loc"]) or "<root>" for e in exc.errors()[:5])
        raise InvalidDelivery(Reason.BAD_INPUT, f"pull_request payload invalid at: {fields}", 422,
                              delivery_id, event) from None
    updated_at = parsed.pull_request.updated_at
    if updated_at is not None and utc(updated_at) is None:
        raise InvalidDelivery(Reason.BAD_INPUT, "pull_request payload invalid at: pull_request.updated_at "
                              "(outside years 1-9999 UTC)", 422, delivery_id, event)
    owner, _, repo = parsed.repository.full_name.partition("/")
    ref = PullRequestRef(owner, repo, parsed.pull_request.number)
    envelope = Envelope(type=f"pull_request.{parsed.action}", subject=ref.target_id,
                        time=utc(updated_at) if updated_at else None, **base)
    if parsed.action not in ACTIONABLE_ACTIONS:
        return ParsedDelivery(envelope, None)
    candidate = review_candidate(tenant, ref, parsed.pull_request.head.sha, parsed.pull_request.draft)
    return ParsedDelivery(envelope, candidate)


def _verify_signature(headers: Mapping[str, str], body: bytes, secrets: list[str], delivery_id: str,
                      event: str) -> None:
    signature = header(headers, "x-hub-signature-256")
    # Non-ASCII would make hmac.compare_digest (inside gidgethub) raise TypeError.
    if signature is None or not signature.startswith("sha256=") or not signature.isascii():
        raise InvalidDelivery(Reason.BAD_SIGNATURE, "missing or malformed X-Hub-Signature-256 (sha256=<hex>) header",
                              401, delivery_id, event)
    for secret in secrets:
        try:
            validate_event(body, signature=signature, secret=secret)
            return
        except ValidationFailure:
            continue
    raise InvalidDelivery(Reason.BAD_SIGNATURE, "signature does not match a configured secret", 401,
                          delivery_id, event)
