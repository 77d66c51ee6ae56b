"""CloudEvents 1.0 over HTTP (structured and binary modes) → envelope + work candidate.

Parsed with the ``cloudevents`` library's core API (``cloudevents.core.bindings.http``).
CloudEvents defines no signature, so a source authenticates its sender with a shared
secret sent as ``Authorization: Bearer <secret>`` (any configured secret matches, compared
in constant time; run it over TLS). Delivery identity is (configured source name, ``id``).

Two stages (see :mod:`intake.sources`). :func:`verify_cloudevent`: the bearer token, and
nothing else — not even the body's ``id`` is read before it holds; a failure is
unauthenticated (counted, never recorded). :func:`normalize_cloudevent`: mode
(``Content-Type: application/cloudevents+json`` is structured, otherwise any ``ce-*`` header
is binary; batches are refused); body JSON; required attributes ``id``, ``source``, ``type``,
``specversion`` (1.0); the library's attribute validation; the schema version, when the
mapping names ``schema_versions`` (``unsupported-schema``); for an actionable ``type``, the
work identity from the mapping. A bearer token signs nothing, so a captured event resent
under a new ``id`` is caught by its digest — everything but the id: in binary mode the
``ce-*`` headers, content type and body; in structured mode the event without ``id`` — and
refused by the ledger (``replayed-body``).

Failure modes written against:

* The library fills a missing ``id`` with a random UUID and a missing ``time`` with "now",
  and defaults a missing ``specversion`` to 1.0: each would silently defeat dedupe or event
  age. Presence is checked on the raw request before the library sees it.
* The library's own JSON reading has no depth guard and raises ``TypeError``/``ValueError``
  for odd attribute values; the body is parsed here first and library errors are answered
  as ``bad-input``, never a 500.
* A request failing authentication is not parsed at all and leaves no receipt, so a forged
  request can neither burn a genuine event's ``id`` nor fill the ledger.
"""

from __future__ import annotations

import hmac
import json
from datetime import datetime
from typing import Any, Mapping

from cloudevents.core.bindings.http import HTTPMessage, from_binary, from_structured
from cloudevents.core.exceptions import (BaseCloudEventException, CloudEventValidationError,
                                         CustomExtensionAttributeError, InvalidAttributeTypeError,
                                         InvalidAttributeValueError, MissingRequiredAttributeError)
from cloudevents.core.formats.json import JSONFormat
from cloudevents.core.base import BaseCloudEvent
from cloudevents.core.v1.event import CloudEvent

from intake.decision import Reason
from intake.envelope import Envelope, TriggerKind
from intake.errors import InvalidDelivery
from intake.sources import ParsedDelivery, VerifiedDelivery
from intake.sources._common import (MAX_DELIVERY_ID, MAX_EVENT_TYPE, MAX_SUBJECT, content_digest, decode_json,
                                    delivery_id_from, identity_text, media_type, utc)
from intake.sources.mapping import PayloadMapping, resolve_candidate
from intake.sources.schema_version import schema_version

STRUCTURED = "application/cloudevents+json"
BATCH = "application/cloudevents-batch+json"
REQUIRED = ("id", "source", "type", "specversion")
_JSON_DATA = JSONFormat.JSON_CONTENT_TYPE_PATTERN


def parse_cloudevent(
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
    return normalize_cloudevent(verify_cloudevent(headers, body, secrets), headers, body, source=source,
                                tenant=tenant, mapping=mapping, received_at=received_at)


def verify_cloudevent(headers: Mapping[str, str], body: bytes, secrets: list[str]) -> VerifiedDelivery:
    """Authenticate the sender (bearer token); the body is not read. ``headers`` lower-case."""
    if not _authorized(headers, secrets):
        raise InvalidDelivery(Reason.BAD_SIGNATURE, "missing or wrong Authorization: Bearer token", 401)
    binary = media_type(headers) != STRUCTURED
    return VerifiedDelivery(delivery_id_from(headers, "ce-id") if binary else None)


def normalize_cloudevent(verified: VerifiedDelivery, headers: Mapping[str, str], body: bytes, *, source: str,
                         tenant: str, mapping: PayloadMapping, received_at: datetime) -> ParsedDelivery:
    """An authenticated request → envelope + candidate; failures carry the id when known (a receipt)."""
    content_type = media_type(headers)
    structured = content_type == STRUCTURED
    binary = not structured and any(name.startswith("ce-") for name in headers)
    delivery_id = verified.delivery_id if binary else None
    if content_type == BATCH:
        raise InvalidDelivery(Reason.BAD_INPUT, "batched CloudEvents are not accepted: send one event per request",
                              415, delivery_id)
    if not structured and not binary:
        raise InvalidDelivery(Reason.BAD_INPUT, f"expected a CloudEvent: Content-Type {STRUCTURED} (structured "
                              "mode) or ce-* headers (binary mode)", 415)
    if structured:
        document = decode_json(body, None, None)
        delivery_id = identity_text(document.get("id"), MAX_DELIVERY_ID)
        present = set(document)
    else:
        if body and content_type and not _JSON_DATA.match(content_type):  # no Content-Type: JSON, as the library
            raise InvalidDelivery(Reason.BAD_INPUT, "binary-mode data must be JSON (Content-Type application/json "
                                  "or */*+json)", 415, delivery_id)
        present = {name[3:] for name in headers if name.startswith("ce-")}
    if delivery_id is None:
        raise InvalidDelivery(Reason.BAD_INPUT, f"missing, oversize or garbled CloudEvent id "
                              f"(a string of 1-{MAX_DELIVERY_ID} characters)", 400)
    if binary and body:
        decode_json(body, delivery_id, None, require_object=False)  # depth and syntax, before the library
    missing = [name for name in REQUIRED if name not in present]
    if missing:
        raise InvalidDelivery(Reason.BAD_INPUT, f"missing required CloudEvent attribute(s): {', '.join(missing)}",
                              422, delivery_id)
    event = _read_event(headers, body, structured, delivery_id)
    digest = _structured_digest(document) if structured else _binary_digest(headers, body)
    return _normalize(event, headers, "time" in present, source, tenant, mapping, received_at, delivery_id,
                      digest)


def _structured_digest(document: dict[str, Any]) -> str:
    """The event without its ``id``, canonically encoded (key order and spacing do not matter)."""
    rest = {k: v for k, v in document.items() if k != "id"}
    return content_digest(json.dumps(rest, sort_keys=True, separators=(",", ":")).encode())


def _binary_digest(headers: Mapping[str, str], body: bytes) -> str:
    """Every ``ce-*`` attribute but ``ce-id``, the content type and the data."""
    attributes = sorted((k, v) for k, v in headers.items() if k.startswith("ce-") and k != "ce-id")
    lines = "".join(f"{k}:{v}\n" for k, v in attributes) + f"content-type:{headers.get('content-type', '')}\n"
    return content_digest(lines.encode("utf-8", "surrogatepass"), body)


def _authorized(headers: Mapping[str, str], secrets: list[str]) -> bool:
    scheme, _, token = (headers.get("authorization") or "").strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return False
    presented = token.strip().encode("utf-8", "surrogatepass")
    matched = False
    for secret in secrets:  # no early exit: the time taken does not say which secret matched
        matched |= bool(secret) and hmac.compare_digest(presented, secret.encode())
    return matched


def _read_event(headers: Mapping[str, str], body: bytes, structured: bool, delivery_id: str) -> BaseCloudEvent:
    message = HTTPMessage(headers=dict(headers), body=body)
    try:
        if structured:
            return from_structured(message, JSONFormat(), CloudEvent)
        return from_binary(message, JSONFormat(), CloudEvent)
    except (BaseCloudEventException, ValueError, TypeError, AttributeError, OverflowError) as exc:
        raise InvalidDelivery(Reason.BAD_INPUT, f"invalid CloudEvent: {_what_failed(exc)}", 422,
                              delivery_id) from None


_CORE = frozenset({"id", "source", "specversion", "type", "datacontenttype", "dataschema", "subject", "time"})
_KINDS = {MissingRequiredAttributeError: "missing", InvalidAttributeTypeError: "wrong type",
          InvalidAttributeValueError: "value not allowed by the spec", CustomExtensionAttributeError: "bad name"}


def _what_failed(exc: Exception) -> str:
    """The attributes that failed and how — never their values (the library's messages quote them),
    and an extension attribute only as such (its name is the sender's)."""
    if not isinstance(exc, CloudEventValidationError):
        return "an attribute value is not valid (time must be RFC 3339 with a timezone)"
    parts = []
    for name, errors in list(exc.errors.items())[:5]:
        kinds = sorted({next((k for cls, k in _KINDS.items() if isinstance(e, cls)), "invalid") for e in errors})
        parts.append(f"{name if name in _CORE else 'an extension attribute'} ({', '.join(kinds)})")
    return "attribute(s) " + "; ".join(parts)


def _normalize(event: BaseCloudEvent, headers: Mapping[str, str], has_time: bool, source: str, tenant: str,
               mapping: PayloadMapping, received_at: datetime, delivery_id: str, digest: str) -> ParsedDelivery:
    event_type = identity_text(event.get_type(), MAX_EVENT_TYPE)
    if event_type is None:
        raise InvalidDelivery(Reason.BAD_INPUT, f"CloudEvent type must be 1-{MAX_EVENT_TYPE} printable characters",
                              422, delivery_id)
    document: dict[str, Any] = {**event.get_attributes(), "data": event.get_data()}
    schema_version(mapping.schema_versions, headers, document, delivery_id, event_type)  # before any mapping path
    subject = event.get_subject()
    if subject is not None and identity_text(subject, MAX_SUBJECT) is None:
        raise InvalidDelivery(Reason.BAD_INPUT, f"CloudEvent subject must be 1-{MAX_SUBJECT} printable characters",
                              422, delivery_id, event_type)
    time = utc(moment) if has_time and (moment := event.get_time()) is not None else None
    if has_time and time is None:
        raise InvalidDelivery(Reason.BAD_INPUT, "CloudEvent time is outside years 1-9999 UTC", 422, delivery_id,
                              event_type)
    envelope = Envelope(id=delivery_id, source=source, type=event_type, subject=subject, time=time,
                        received_at=received_at,
                        trigger_kind=TriggerKind.EVENT, tenant=tenant, body_digest=digest)
    if event_type not in mapping.actionable_types:
        return ParsedDelivery(envelope, None)
    return ParsedDelivery(envelope, resolve_candidate(document, mapping, tenant, delivery_id, event_type))
