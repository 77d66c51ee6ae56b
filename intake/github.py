"""GitHub ``pull_request`` webhooks → envelope + work candidate.

Checked in this order, so the cheapest and most security-relevant check runs first:
delivery id and event headers; ``X-Hub-Signature-256`` verified in constant time by
gidgethub against the configured secret (SHA-1 signatures are refused); content type;
JSON body; payload shape (pydantic). A failure raises :class:`InvalidDelivery` carrying
the delivery id when one was sent, so the API can still write a reject receipt.
Signature failures never record the delivery id as seen: a forged request must not be
able to burn a genuine delivery's id.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Mapping

from gidgethub import ValidationFailure
from gidgethub.sansio import validate_event
from pydantic import BaseModel, ConfigDict, ValidationError

from intake.decision import Reason
from intake.envelope import Envelope, PullRequestRef, TriggerKind, WorkCandidate
from intake.errors import InvalidDelivery
from intake.identity import review_work_key

ACTIONABLE_ACTIONS = frozenset({"opened", "reopened", "synchronize", "ready_for_review"})
MAX_JSON_DEPTH_ERROR = "JSON nesting is too deep"


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _Repo(_Lenient):
    full_name: str


class _Ref(_Lenient):
    sha: str
    ref: str | None = None


class _PullRequest(_Lenient):
    number: int
    state: str
    head: _Ref
    draft: bool = False
    updated_at: datetime | None = None


class PullRequestEvent(_Lenient):
    """The part of GitHub's ``pull_request`` payload Sluicegate relies on."""

    action: str
    number: int
    pull_request: _PullRequest
    repository: _Repo


@dataclass(frozen=True)
class GithubDelivery:
    envelope: Envelope
    candidate: WorkCandidate | None
    """``None`` when the event is valid but asks for no work (e.g. ``labeled``, ``ping``)."""


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    return value.strip() if value and value.strip() else None


def parse_github_delivery(
    headers: Mapping[str, str],
    body: bytes,
    *,
    source: str,
    tenant: str,
    secrets: list[str],
    received_at: datetime,
) -> GithubDelivery:
    """Verify and normalize one delivery. ``headers`` must have lower-case keys."""
    delivery_id = _header(headers, "x-github-delivery")
    event = _header(headers, "x-github-event")
    if delivery_id is None or len(delivery_id) > 256:
        raise InvalidDelivery(Reason.BAD_INPUT, "missing or oversize X-GitHub-Delivery header", 400, None, event)
    if event is None:
        raise InvalidDelivery(Reason.BAD_INPUT, "missing X-GitHub-Event header", 400, delivery_id)
    _verify_signature(headers, body, secrets, delivery_id, event)
    content_type = (headers.get("content-type") or "").split(";")[0].strip().lower()
    if content_type != "application/json":
        raise InvalidDelivery(Reason.BAD_INPUT, f"content type must be application/json, got {content_type!r}",
                              415, delivery_id, event)
    data = _decode_json(body, delivery_id, event)
    base = dict(id=delivery_id, source=source, received_at=received_at, trigger_kind=TriggerKind.EVENT,
                tenant=tenant, data=data)
    if event == "ping":
        return GithubDelivery(Envelope(type="ping", subject=None, time=None, **base), None)
    if event != "pull_request":
        raise InvalidDelivery(Reason.UNSUPPORTED_EVENT, f"event type {event!r} is not handled", 422,
                              delivery_id, event)
    try:
        parsed = PullRequestEvent.model_validate(data)
    except ValidationError as exc:
        fields = ", ".join(".".join(str(p) for p in e["loc"]) or "<root>" for e in exc.errors()[:5])
        raise InvalidDelivery(Reason.BAD_INPUT, f"pull_request payload invalid at: {fields}", 422,
                              delivery_id, f"pull_request") from None
    owner, _, repo = parsed.repository.full_name.partition("/")
    if not owner or not repo:
        raise InvalidDelivery(Reason.BAD_INPUT, "repository.full_name must be owner/repo", 422, delivery_id, event)
    ref = PullRequestRef(owner, repo, parsed.pull_request.number)
    envelope = Envelope(type=f"pull_request.{parsed.action}", subject=ref.target_id,
                        time=parsed.pull_request.updated_at, **base)
    if parsed.action not in ACTIONABLE_ACTIONS:
        return GithubDelivery(envelope, None)
    candidate = WorkCandidate(work_key=review_work_key(ref), target=ref,
                              input_version=parsed.pull_request.head.sha, tenant=tenant,
                              draft=parsed.pull_request.draft)
    return GithubDelivery(envelope, candidate)


def _verify_signature(headers: Mapping[str, str], body: bytes, secrets: list[str], delivery_id: str,
                      event: str) -> None:
    signature = _header(headers, "x-hub-signature-256")
    if signature is None or not signature.startswith("sha256="):
        raise InvalidDelivery(Reason.BAD_SIGNATURE, "missing X-Hub-Signature-256 (sha256=...) header", 401,
                              delivery_id, event)
    for secret in secrets:
        try:
            validate_event(body, signature=signature, secret=secret)
            return
        except ValidationFailure:
            continue
    raise InvalidDelivery(Reason.BAD_SIGNATURE, "signature does not match the configured secret", 401,
                          delivery_id, event)


def _decode_json(body: bytes, delivery_id: str, event: str) -> dict:
    try:
        data = json.loads(body)
    except RecursionError:
        raise InvalidDelivery(Reason.BAD_INPUT, MAX_JSON_DEPTH_ERROR, 400, delivery_id, event) from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidDelivery(Reason.BAD_INPUT, f"body is not valid JSON: {exc}", 400, delivery_id, event) from None
    if not isinstance(data, dict):
        raise InvalidDelivery(Reason.BAD_INPUT, "body must be a JSON object", 400, delivery_id, event)
    return data
