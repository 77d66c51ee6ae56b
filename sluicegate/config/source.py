"""``sources:`` — webhook sources by name (``POST /webhooks/<name>``); see docs/webhooks.md.

Validated at start-up, with the dotted path in the error, against these failure modes:

* a ``standard-webhooks`` secret that is not ``whsec_<base64>``: the library would decode
  whatever it is given into *some* key and every delivery would fail as ``bad-signature``;
* a generic source (``standard-webhooks``, ``cloudevents``) without a mapping: it could
  never name work; a ``github`` source with one: it would be silently ignored. So a ``github``
  source has no ``mapping.schema_versions`` either — unversioned by decision: GitHub sends no
  per-delivery schema version, its payloads change additively, and ``intake/github.py`` checks a
  fixed, small shape field by field (docs/webhooks.md, "Evolving a mapping");
* the old single ``secret:`` key next to ``secrets:``: which one wins would be a guess;
* no ``repositories``: a source that serves "whatever its payload names" would let its
  sender pick any repository the forge credential can read (``out-of-scope`` needs a list);
  ``["*/*"]`` says "everything" deliberately;
* an empty or short secret (under 16 characters): guessable, and an empty bearer token
  must never authenticate. Secrets are ``SecretStr``: hidden in reprs and tracebacks.
"""

from __future__ import annotations

import base64
from typing import Any, Literal

from pydantic import Field, SecretStr, ValidationInfo, field_validator, model_validator

from intake.identity import TENANT_PATTERN
from intake.scope import check_glob
from intake.sources.mapping import PayloadMapping
from sluicegate.config.section import Section
from sluicegate.config.secret_fields import VerifierSecret

SourceKind = Literal["github", "standard-webhooks", "cloudevents"]
GENERIC_KINDS = ("standard-webhooks", "cloudevents")
WHSEC_PREFIX = "whsec_"
MIN_WHSEC_BYTES = 24
"""The Standard Webhooks spec's lower bound for a signing key (192 bits)."""


MAX_EVENT_AGE_SECONDS = 7 * 24 * 3600


class SourceConfig(Section):
    """One webhook source. ``secret: x`` (the old single-secret form) is read as ``secrets: [x]``.

    Rotation: list the new and the old secret; a delivery verifying with any one is accepted.
    """


    kind: SourceKind
    tenant: str = Field(pattern=TENANT_PATTERN)
    """Whose work this source's deliveries are (budget, forge credentials, egress, dedupe partition)."""
    repositories: list[str] = Field(min_length=1)
    """``owner/repo`` globs this source serves (``acme/*``); a delivery naming any other is ``out-of-scope``."""
    secrets: list[VerifierSecret] = Field(min_length=1)
    """github: webhook secrets; standard-webhooks: ``whsec_<base64>`` keys; cloudevents: bearer tokens."""
    max_age_seconds: float = Field(default=3600, gt=0, le=MAX_EVENT_AGE_SECONDS)
    """Event-age bound: an event older than this when received is too old; 0 < value ≤ 7 days,
    never unbounded (a captured delivery older than this is refused by its age, whatever the
    dedupe window)."""
    mapping: PayloadMapping | None = Field(default=None, validate_default=True)
    """Generic kinds only: where the payload names owner, repo, number, version; which types act."""
    concurrency_key: str | None = None
    """This source's resource in conflict (default: ``capacity.concurrency_key``)."""
    concurrency_limit: int | None = Field(default=None, ge=1)
    """Runs at once per concurrency key for this source's work (default: ``capacity.concurrency_limit``)."""
    priority: int | None = Field(default=None, ge=1, le=5)
    """1 (first) .. 5 (last); default by trigger family (``capacity.priority_by_trigger``)."""

    @model_validator(mode="before")
    @classmethod
    def _single_secret(cls, data: Any) -> Any:
        if isinstance(data, dict) and "secret" in data:
            if "secrets" in data:
                raise ValueError("give either secret or secrets, not both")
            data = {k: v for k, v in data.items() if k != "secret"} | {"secrets": [data["secret"]]}
        return data

    @field_validator("secrets")
    @classmethod
    def _usable_secrets(cls, secrets: list[SecretStr], info: ValidationInfo) -> list[SecretStr]:
        for i, secret in enumerate(secrets):
            if info.data.get("kind") == "standard-webhooks" and not is_whsec(secret.get_secret_value()):
                raise ValueError(f"secrets[{i}] must be {WHSEC_PREFIX}<base64 of at least {MIN_WHSEC_BYTES} bytes>")
        return secrets

    @field_validator("repositories")
    @classmethod
    def _usable_globs(cls, globs: list[str]) -> list[str]:
        return [check_glob(g) for g in globs]

    @field_validator("mapping")
    @classmethod
    def _mapping_for_kind(cls, mapping: PayloadMapping | None, info: ValidationInfo) -> PayloadMapping | None:
        kind = info.data.get("kind")
        if kind == "github" and mapping is not None:
            raise ValueError("a github source has a fixed payload shape; remove mapping")
        if kind in GENERIC_KINDS and mapping is None:
            raise ValueError(f"a {kind} source needs a mapping (owner, repo, number, version, actionable_types)")
        if kind == "cloudevents" and mapping is not None and {"type", "time"} & mapping.model_fields_set:
            raise ValueError("a cloudevents source takes type and time from the event's attributes; "
                             "remove mapping.type / mapping.time")
        return mapping

    @property
    def secret(self) -> str:
        """The first secret's value: the one to sign or send with (tests, demo, bench)."""
        return self.secrets[0].get_secret_value()

    def secret_values(self) -> list[str]:
        """Every secret's value, for the verify stage of this source's parser."""
        return [s.get_secret_value() for s in self.secrets]


def is_whsec(secret: str) -> bool:
    """``whsec_`` followed by strict base64 of at least :data:`MIN_WHSEC_BYTES` bytes."""
    if not secret.startswith(WHSEC_PREFIX):
        return False
    try:
        return len(base64.b64decode(secret[len(WHSEC_PREFIX):], validate=True)) >= MIN_WHSEC_BYTES
    except ValueError:
        return False
