"""Standard Webhooks (https://www.standardwebhooks.com) → envelope + work candidate.

Two stages (see :mod:`intake.sources`). :func:`verify_standard_webhook`: ``webhook-id`` (the
delivery id), then ``webhook-timestamp`` and ``webhook-signature`` verified by the
``standardwebhooks`` library against each configured ``whsec_`` secret in turn (rotation:
any one verifying is enough) with the library's ±5 minute timestamp tolerance, so a captured
delivery cannot be replayed later; every failure here is unauthenticated (counted, never
recorded). :func:`normalize_standard_webhook`: content type; JSON body; event type and time;
the schema version, when the mapping names ``schema_versions`` (``unsupported-schema``); for an
actionable type, the work identity from the source's mapping (a receipt on failure).
The same body re-signed under a new ``webhook-id`` verifies; its digest lets the ledger
refuse it (``replayed-body``).

Failure modes written against:

* The timestamp check runs before the signature check (it is the library's order, and the
  same for every secret), so a replayed or badly clocked delivery gets a message saying
  which way the clock is off rather than a bare "bad signature". The reason stays
  ``bad-signature`` (401): the timestamp is part of what is signed, and a delivery outside
  the window was not verified. ``too-old`` is kept for *verified* events older than the
  source's ``max_age_seconds`` (a decision, not an invalid delivery).
* The library raises ``ValueError`` (not its own error) for a malformed signature list and
  ``UnicodeDecodeError`` for a non-UTF-8 body; both are answered, never a 500.
* A signature failure records nothing at all: a forged request cannot burn a delivery id.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial
from typing import Any, Mapping

from standardwebhooks import Webhook, WebhookVerificationError

from intake.decision import Reason
from intake.envelope import Envelope, TriggerKind
from intake.errors import InvalidDelivery
from intake.sources import ParsedDelivery, VerifiedDelivery
from intake.sources._common import (MAX_EVENT_TYPE, content_digest, decode_json, delivery_id_from, header,
                                    identity_text, media_type, utc)
from intake.sources.mapping import PayloadMapping, is_missing, resolve, resolve_candidate
from intake.sources.schema_version import schema_version

SIGNED_HEADERS = ("webhook-id", "webhook-timestamp", "webhook-signature")
# The pinned library's messages, turned into ones that tell the sender what to fix.
_LIBRARY_MESSAGES = {
    "Message timestamp too old": "webhook-timestamp is more than 5 minutes in the past "
                                 "(a delayed or replayed delivery; re-sign it with the current time)",
    "Message timestamp too new": "webhook-timestamp is more than 5 minutes in the future (check the sender's clock)",
    "Invalid Signature Headers": "webhook-timestamp is not a Unix time in seconds",
    "Missing required headers": "webhook-timestamp and webhook-signature headers are required",
}


def parse_standard_webhook(
    headers: Mapping[str, str],
    body: bytes,
    *,
    source: str,
    tenant: str,
    secrets: list[str],
    mapping: PayloadMapping,
    received_at: datetime,
) -> ParsedDelivery:
    """Both stages at once (tests, benchmarks). ``headers`` must have lower-case keys."""
    return normalize_standard_webhook(verify_standard_webhook(headers, body, secrets), headers, body,
                                      source=source, tenant=tenant, mapping=mapping, received_at=received_at)


def verify_standard_webhook(headers: Mapping[str, str], body: bytes, secrets: list[str]) -> VerifiedDelivery:
    """Authenticate one delivery; every failure is unauthenticated. ``headers`` lower-case."""
    delivery_id = delivery_id_from(headers, "webhook-id")
    if delivery_id is None:
        raise InvalidDelivery(Reason.BAD_INPUT, "missing, oversize or garbled webhook-id header", 400)
    _verify(headers, body, secrets, delivery_id)
    return VerifiedDelivery(delivery_id)


def normalize_standard_webhook(verified: VerifiedDelivery, headers: Mapping[str, str], body: bytes, *,
                               source: str, tenant: str, mapping: PayloadMapping,
                               received_at: datetime) -> ParsedDelivery:
    """A verified delivery → envelope + candidate; failures carry the delivery id (a receipt)."""
    delivery_id = verified.delivery_id
    if delivery_id is None:  # verify_standard_webhook never returns one without it
        raise InvalidDelivery(Reason.BAD_INPUT, "missing webhook-id header", 400)
    if media_type(headers) != "application/json":
        raise InvalidDelivery(Reason.BAD_INPUT, "content type must be application/json", 415, delivery_id)
    data = decode_json(body, delivery_id, None)
    # Before any mapping path is read: under another schema they may point at something else.
    schema_version(mapping.schema_versions, headers, data, delivery_id)
    event_type = identity_text(resolve(data, mapping.type), MAX_EVENT_TYPE)
    if event_type is None:
        raise InvalidDelivery(Reason.BAD_INPUT, f"payload has no event type at {mapping.type} "
                              f"(a string of 1-{MAX_EVENT_TYPE} characters)", 422, delivery_id)
    time = _event_time(data, mapping, headers, delivery_id, event_type)
    envelope = partial(Envelope, id=delivery_id, source=source, type=event_type, time=time, received_at=received_at,
                       trigger_kind=TriggerKind.EVENT, tenant=tenant, body_digest=content_digest(body))
    if event_type not in mapping.actionable_types:
        return ParsedDelivery(envelope(subject=None), None)
    candidate = resolve_candidate(data, mapping, tenant, delivery_id, event_type)
    return ParsedDelivery(envelope(subject=candidate.target.target_id), candidate)


def _verify(headers: Mapping[str, str], body: bytes, secrets: list[str], delivery_id: str) -> None:
    signed = {name: headers.get(name, "") for name in SIGNED_HEADERS} | {"webhook-id": delivery_id}
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidDelivery(Reason.BAD_INPUT, "body is not UTF-8 text", 400, delivery_id) from None
    for secret in secrets:
        try:
            Webhook(secret).verify(text, signed, json_parse=False)
            return
        except WebhookVerificationError as exc:
            if str(exc) == "No matching signature found":
                continue  # maybe signed with another (rotated) secret
            message = _LIBRARY_MESSAGES.get(str(exc), "webhook verification failed")
            raise InvalidDelivery(Reason.BAD_SIGNATURE, message, 401, delivery_id) from None
        except ValueError:  # "v1,a,b", a missing comma or bad base64 padding inside the library
            raise InvalidDelivery(Reason.BAD_SIGNATURE, "webhook-signature is malformed: expected "
                                  "space-separated v1,<base64> entries", 401, delivery_id) from None
    raise InvalidDelivery(Reason.BAD_SIGNATURE, "no webhook-signature entry matches a configured secret", 401,
                          delivery_id)


def _event_time(data: dict[str, Any], mapping: PayloadMapping, headers: Mapping[str, str], delivery_id: str | None,
                event_type: str) -> datetime:
    raw = resolve(data, mapping.time) if mapping.time else None
    parsed = None
    try:
        if raw is None or is_missing(raw):  # the signed header, already checked by the library
            parsed = datetime.fromtimestamp(float(header(headers, "webhook-timestamp") or ""), UTC)
        elif isinstance(raw, str):
            parsed = utc(datetime.fromisoformat(raw))
        elif isinstance(raw, (int, float)) and not isinstance(raw, bool):
            parsed = datetime.fromtimestamp(raw, UTC)
    except (ValueError, OverflowError, OSError):
        pass
    if parsed is None:
        raise InvalidDelivery(Reason.BAD_INPUT, f"event time at {mapping.time} is not an ISO 8601 time or Unix "
                              "seconds within years 1-9999 UTC", 422, delivery_id, event_type)
    return parsed
