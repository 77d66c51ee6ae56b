"""``POST /webhooks/{source}`` routing: the source's ``kind`` picks the parser.

Every parser returns the same :class:`ParsedDelivery`; the source's event-age bound is
attached here, because parsers know nothing of configuration.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Mapping

from intake.github import parse_github_delivery
from intake.sources import ParsedDelivery
from intake.sources._common import delivery_id_from, header, media_type
from intake.sources.cloudevents_source import STRUCTURED, parse_cloudevent
from intake.sources.standard_webhooks import parse_standard_webhook
from sluicegate.source_config import SourceConfig

DELIVERY_ID_HEADER = {"github": "x-github-delivery", "standard-webhooks": "webhook-id", "cloudevents": "ce-id"}
"""Where each kind carries its delivery id in the headers (CloudEvents: binary mode only)."""
EVENT_HEADER = {"github": "x-github-event", "cloudevents": "ce-type"}


def parse_delivery(name: str, src: SourceConfig, headers: Mapping[str, str], body: bytes,
                   received_at: datetime) -> ParsedDelivery:
    """Verify and normalize one delivery for source ``name``; raises ``InvalidDelivery``."""
    common = dict(source=name, tenant=src.tenant, secrets=src.secrets, received_at=received_at)
    if src.kind == "github":
        parsed = parse_github_delivery(headers, body, **common)
    elif src.kind == "standard-webhooks":
        parsed = parse_standard_webhook(headers, body, mapping=src.mapping, **common)
    else:
        parsed = parse_cloudevent(headers, body, mapping=src.mapping, **common)
    return replace(parsed, max_age_seconds=src.max_age_seconds)


def delivery_hint(src: SourceConfig, headers: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(delivery id, event type) from the headers alone, for a body that is never read (413) and traces."""
    if src.kind == "cloudevents" and media_type(headers) == STRUCTURED:
        return None, None  # structured mode: the id is in the body, ce-* headers mean nothing
    event = header(headers, EVENT_HEADER[src.kind]) if src.kind in EVENT_HEADER else None
    return delivery_id_from(headers, DELIVERY_ID_HEADER[src.kind]), event
