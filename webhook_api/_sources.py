"""``POST /webhooks/{source}`` routing: the source's ``kind`` picks the parser's two stages.

:func:`authenticate` runs the kind's verify stage (headers and raw bytes only); its failures
are unauthenticated and the API records nothing for them. :func:`normalize` runs the parse
stage on a verified delivery; its failures get a reject receipt. The source's event-age
bound is attached here, because parsers know nothing of configuration, and secrets are
unwrapped here, the one place they leave their ``SecretStr``.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Mapping

from intake.github import GithubMapper, normalize_github, verify_github
from intake.sources import ParsedDelivery, VerifiedDelivery
from intake.sources.cloudevents_source import normalize_cloudevent, verify_cloudevent
from intake.sources.standard_webhooks import normalize_standard_webhook, verify_standard_webhook
from sluicegate.config.source import SourceConfig
from tasks import registry

HEADER_AUTH_KINDS = frozenset({"cloudevents"})
"""Kinds whose verify stage reads headers only (a bearer token): authenticated before the body is read."""
_VERIFY = {"github": verify_github, "standard-webhooks": verify_standard_webhook, "cloudevents": verify_cloudevent}


def authenticate(src: SourceConfig, headers: Mapping[str, str], body: bytes) -> VerifiedDelivery:
    """Verify the sender of one delivery; raises ``InvalidDelivery`` (unauthenticated)."""
    return _VERIFY[src.kind](headers, body, src.secret_values())


def github_mappers(state: object) -> Mapping[str, GithubMapper]:
    """The enabled tasks' GitHub trigger mappings the app was started with (``app.state.github_mappers``);
    every registered task's when the state has none (tests that build a bare state)."""
    mappers = getattr(state, "github_mappers", None)
    return mappers if mappers is not None else registry.github_mappers(registry.TASKS.values())


def normalize(name: str, src: SourceConfig, verified: VerifiedDelivery, headers: Mapping[str, str], body: bytes,
              received_at: datetime, mappers: Mapping[str, GithubMapper] | None = None) -> ParsedDelivery:
    """Parse a verified delivery for source ``name``; raises ``InvalidDelivery`` (a receipt).
    ``mappers``: GitHub event -> the enabled task's trigger mapping (default: every registered task's)."""
    if src.kind == "github":
        parsed = normalize_github(verified, headers, body, source=name, tenant=src.tenant, received_at=received_at,
                                  mappers=mappers if mappers is not None else github_mappers(None))
    else:
        assert src.mapping is not None, "settings give every generic source a mapping (sluicegate.config.source)"
        kind = normalize_standard_webhook if src.kind == "standard-webhooks" else normalize_cloudevent
        parsed = kind(verified, headers, body, source=name, tenant=src.tenant, mapping=src.mapping,
                      received_at=received_at)
    return replace(parsed, max_age_seconds=src.max_age_seconds)


def parse_delivery(name: str, src: SourceConfig, headers: Mapping[str, str], body: bytes,
                   received_at: datetime) -> ParsedDelivery:
    """Both stages (the parser fuzz tests); raises ``InvalidDelivery`` from either."""
    return normalize(name, src, authenticate(src, headers, body), headers, body, received_at)
