"""GitHub webhooks → envelope + work candidate (``pull_request`` here; other events by their task).

Two stages (see :mod:`intake.sources`). :func:`verify_github`: delivery id and event
headers, then ``X-Hub-Signature-256`` verified in constant time by gidgethub against each
configured secret in turn (rotation: any one verifying is enough; SHA-1 signatures are
refused) — nothing of the body is read before the signature holds, and a failure here is
unauthenticated (counted, never recorded). :func:`normalize_github`: content type, JSON body,
payload shape (pydantic); a failure raises :class:`InvalidDelivery` with the delivery id, so
the API writes a reject receipt. Which events are handled is the enabled tasks' trigger
mappings (:data:`GithubMapper`, injected: ``tasks.registry``; ``issues`` is the triage task's);
``pull_request`` (:func:`map_pull_request`, the review task's) is the default. The delivery id header is not covered by GitHub's HMAC, so a
captured body replayed under a new id verifies: the body digest lets the ledger refuse it
(``replayed-body``).

Values that end up in the ledger are checked here with :mod:`intake.hygiene` (action, head
sha, owner/repo, number), because PostgreSQL refuses an over-long column or a NUL *after*
the decision was taken, as a 500. The raw payload is not kept on the envelope.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Callable, Mapping

from gidgethub import ValidationFailure
from gidgethub.sansio import validate_event
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from intake.decision import Reason
from intake.envelope import Envelope, PullRequestRef, TriggerKind
from intake.errors import InvalidDelivery
from intake.identity import review_candidate
from intake.hygiene import MAX_NUMBER, display_title, input_version, repository
from intake.sources import ParsedDelivery, VerifiedDelivery
from intake.sources._common import (MAX_EVENT_TYPE, MAX_JSON_DEPTH_ERROR, content_digest, decode_json,
                                    delivery_id_from, header, identity_text, media_type, utc)

# "closed" is routed through freshness on purpose: the re-read says target-closed, and that
# decision tombstones the work item so a later reopen can admit a finished version again.
ACTIONABLE_ACTIONS = frozenset({"opened", "reopened", "synchronize", "ready_for_review", "closed"})
GithubDelivery = ParsedDelivery
"""The common parsed-delivery type, under its first name."""
__all__ = ["ACTIONABLE_ACTIONS", "GithubDelivery", "GithubEvent", "GithubMapper", "MAX_JSON_DEPTH_ERROR",
           "PullRequestEvent", "map_pull_request", "normalize_github", "parse_github_delivery", "verify_github"]


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


def _check(rule: Callable[[object], object | None], what: str) -> AfterValidator:
    def check(value: str) -> str:
        if rule(value) is None:
            raise ValueError(f"not {what}")
        return value
    return AfterValidator(check)


class _Repo(_Lenient):
    full_name: Annotated[str, _check(repository, "owner/repo")]


class _Ref(_Lenient):
    sha: Annotated[str, _check(input_version, "a version")]
    ref: str | None = None


class _PullRequest(_Lenient):
    number: int = Field(gt=0, le=MAX_NUMBER, strict=True)
    state: str
    head: _Ref
    draft: bool = False
    updated_at: datetime | None = None
    title: Any = None
    """Shown in the Temporal UI only (``intake.hygiene.display_title`` keeps a short string)."""


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
    mappers: Mapping[str, GithubMapper] | None = None,
) -> ParsedDelivery:
    """Both stages at once (tests, benchmarks). ``headers`` must have lower-case keys."""
    return normalize_github(verify_github(headers, body, secrets), headers, body, source=source, tenant=tenant,
                            received_at=received_at, mappers=mappers)


def verify_github(headers: Mapping[str, str], body: bytes, secrets: list[str]) -> VerifiedDelivery:
    """Authenticate one delivery; every failure is unauthenticated. ``headers`` lower-case."""
    delivery_id = delivery_id_from(headers, "x-github-delivery")
    event = identity_text(header(headers, "x-github-event"), MAX_EVENT_TYPE)
    if delivery_id is None:
        raise InvalidDelivery(Reason.BAD_INPUT, "missing, oversize or garbled X-GitHub-Delivery header", 400, None,
                              event)
    if event is None:
        raise InvalidDelivery(Reason.BAD_INPUT, "missing, oversize or garbled X-GitHub-Event header", 400,
                              delivery_id)
    _verify_signature(headers, body, secrets, delivery_id, event)
    return VerifiedDelivery(delivery_id, event)


@dataclass(frozen=True)
class GithubEvent:
    """A verified GitHub delivery's identity, handed to the event's mapper (a task's trigger mapping)."""

    delivery_id: str | None
    event: str | None
    tenant: str
    base: dict[str, Any]
    """The envelope fields every mapper passes on (``Envelope(type=..., subject=..., time=..., **base)``)."""

    def invalid(self, exc: ValidationError) -> InvalidDelivery:
        """A payload that failed its model: ``bad-input`` 422 naming the fields, never their values."""
        fields = ", ".join(".".join(str(p) for p in e["loc"]) or "<root>" for e in exc.errors()[:5])
        return InvalidDelivery(Reason.BAD_INPUT, f"{self.event} payload invalid at: {fields}", 422,
                               self.delivery_id, self.event)

    def envelope(self, type_: str, subject: str, time: datetime | None) -> Envelope:
        return Envelope(type=type_, subject=subject, time=time, **self.base)


GithubMapper = Callable[[Any, GithubEvent], ParsedDelivery]
"""A task's trigger mapping for one GitHub event name: decoded JSON -> envelope + candidate (or ``None``)."""


def map_pull_request(data: Any, event: GithubEvent) -> ParsedDelivery:
    """``pull_request`` -> the review task's candidate (``ACTIONABLE_ACTIONS``; others ask for no work)."""
    try:
        parsed = PullRequestEvent.model_validate(data)
    except ValidationError as exc:
        raise event.invalid(exc) from None
    updated_at = parsed.pull_request.updated_at
    if updated_at is not None and utc(updated_at) is None:
        raise InvalidDelivery(Reason.BAD_INPUT, "pull_request payload invalid at: pull_request.updated_at "
                              "(outside years 1-9999 UTC)", 422, event.delivery_id, event.event)
    owner, _, repo = parsed.repository.full_name.partition("/")
    ref = PullRequestRef(owner, repo, parsed.pull_request.number)
    envelope = event.envelope(f"pull_request.{parsed.action}", ref.target_id, utc(updated_at) if updated_at else None)
    if parsed.action not in ACTIONABLE_ACTIONS:
        return ParsedDelivery(envelope, None)
    candidate = review_candidate(event.tenant, ref, parsed.pull_request.head.sha, parsed.pull_request.draft,
                                 display_title(parsed.pull_request.title))
    return ParsedDelivery(envelope, candidate)


DEFAULT_MAPPERS: Mapping[str, GithubMapper] = {"pull_request": map_pull_request}
"""Without a task catalogue (tests, benchmarks): the review task's one event."""


def normalize_github(verified: VerifiedDelivery, headers: Mapping[str, str], body: bytes, *, source: str,
                     tenant: str, received_at: datetime,
                     mappers: Mapping[str, GithubMapper] | None = None) -> ParsedDelivery:
    """A verified delivery → envelope + candidate; failures carry the delivery id (a receipt).
    ``mappers``: GitHub event name → the enabled task's trigger mapping (``tasks.registry``)."""
    delivery_id, event = verified.delivery_id, verified.event_type
    if delivery_id is None:  # verify_github never returns one without it
        raise InvalidDelivery(Reason.BAD_INPUT, "missing X-GitHub-Delivery header", 400)
    if media_type(headers) != "application/json":
        raise InvalidDelivery(Reason.BAD_INPUT, "content type must be application/json", 415, delivery_id, event)
    data = decode_json(body, delivery_id, event)
    base: dict[str, Any] = dict(id=delivery_id, source=source, received_at=received_at,
                                trigger_kind=TriggerKind.EVENT, tenant=tenant, body_digest=content_digest(body))
    if event == "ping":
        return ParsedDelivery(Envelope(type="ping", subject=None, time=None, **base), None)
    mappers = DEFAULT_MAPPERS if mappers is None else mappers
    mapper = mappers.get(event or "")
    if mapper is None:
        handled = ", ".join(sorted(mappers)) or "none"
        raise InvalidDelivery(Reason.UNSUPPORTED_EVENT, f"event type is not handled (only {handled} and ping)",
                              422, delivery_id, event)
    return mapper(data, GithubEvent(delivery_id, event, tenant, base))


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
