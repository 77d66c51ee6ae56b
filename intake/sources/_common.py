"""Checks every source kind shares: headers, media type, JSON body, identity text.

Bounds here mirror the ledger's receipt columns (``delivery_id`` 256, ``event_type`` 128,
``subject`` 512, ``input_version`` 128): a value past them would be accepted by SQLite and
refused by PostgreSQL *after* the decision, turning a bad delivery into a 500.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any, Mapping

from intake.decision import Reason
from intake.errors import InvalidDelivery
from intake.hygiene import MAX_DELIVERY_ID, MAX_EVENT_TYPE, MAX_SUBJECT, identity_text

MAX_JSON_DEPTH = 64
MAX_JSON_DEPTH_ERROR = "JSON nesting is too deep"
__all__ = ["MAX_DELIVERY_ID", "MAX_EVENT_TYPE", "MAX_JSON_DEPTH", "MAX_JSON_DEPTH_ERROR", "MAX_SUBJECT",
           "content_digest", "decode_json", "delivery_id_from", "header", "identity_text", "media_type", "utc"]


def header(headers: Mapping[str, str], name: str) -> str | None:
    """The stripped header value, or ``None`` when absent or blank. Keys must be lower-case."""
    value = headers.get(name)
    return value.strip() if value and value.strip() else None


def media_type(headers: Mapping[str, str]) -> str:
    """``Content-Type`` without parameters, lower-cased (``""`` when absent)."""
    return (headers.get("content-type") or "").split(";")[0].strip().lower()


def utc(value: datetime) -> datetime | None:
    """``value`` in UTC (a naive time is read as UTC); ``None`` when UTC cannot hold it
    (``0001-01-01T00:00+01:00``), which would overflow on the way into or out of the ledger."""
    try:
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC)
    except (OverflowError, ValueError):
        return None


def delivery_id_from(headers: Mapping[str, str], name: str) -> str | None:
    """A usable delivery id from header ``name`` (``None`` when missing, oversize or garbled)."""
    return identity_text(header(headers, name), MAX_DELIVERY_ID)


def content_digest(*parts: bytes) -> str:
    """sha256 (hex) of what a sender's credential vouches for, less the delivery id: two
    deliveries with one digest under different ids are one delivery replayed (``replayed-body``)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(len(part).to_bytes(8, "big"))  # unambiguous framing between parts
        digest.update(part)
    return digest.hexdigest()


def decode_json(body: bytes, delivery_id: str | None, event_type: str | None, *,
                require_object: bool = True) -> Any:
    """Parse the body; a non-JSON, non-object (when required) or too deep body is ``bad-input`` 400."""
    try:
        data = json.loads(body)
    except RecursionError:
        raise InvalidDelivery(Reason.BAD_INPUT, MAX_JSON_DEPTH_ERROR, 400, delivery_id, event_type) from None
    except UnicodeDecodeError:
        raise InvalidDelivery(Reason.BAD_INPUT, "body is not UTF-8 JSON", 400, delivery_id, event_type) from None
    except json.JSONDecodeError as exc:  # the position only: an error body never quotes the input
        raise InvalidDelivery(Reason.BAD_INPUT, f"body is not valid JSON: {exc.msg} at line {exc.lineno} "
                              f"column {exc.colno}", 400, delivery_id, event_type) from None
    except ValueError:
        raise InvalidDelivery(Reason.BAD_INPUT, "body is not valid JSON", 400, delivery_id, event_type) from None
    if require_object and not isinstance(data, dict):
        raise InvalidDelivery(Reason.BAD_INPUT, "body must be a JSON object", 400, delivery_id, event_type)
    if _deeper_than(data, MAX_JSON_DEPTH):
        raise InvalidDelivery(Reason.BAD_INPUT, f"{MAX_JSON_DEPTH_ERROR} (limit {MAX_JSON_DEPTH} levels)", 400,
                              delivery_id, event_type)
    return data


def _deeper_than(value: Any, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False
