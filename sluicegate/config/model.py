"""``model:`` — the OpenAI-compatible endpoint, its key, and per-tenant credentials.

A tenant listed under ``model.tenants`` calls the model with its own key (inline or from a file),
at its own base URL when it sets one; every other tenant uses the default ``base_url``/``api_key``.
The worker keeps one client per tenant (``activities/model_credentials.py``); a tenant or global
kill drops the tenant's cached client, so the next call after an unkill reads the key file again.

Failure modes this module is written against:

* a tenant entry with a different ``base_url`` but no key of its own would send the default key to
  another host: every tenant entry must set exactly one of ``api_key`` or ``api_key_file``;
* a tenant name that no source serves (a typo) would silently fall back to the default key:
  ``sluicegate.config.tenancy.check_tenancy`` refuses it, naming the dotted path.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator

from sluicegate.config.section import Section as _Section
from sluicegate.config.secret_fields import Credential


class Price(_Section):
    """USD per million tokens."""

    input: float
    cached_input: float
    output: float
    reasoning: float


class TenantModelConfig(_Section):
    """One tenant's model credentials: its own key, optionally its own endpoint."""

    base_url: str | None = None
    """Default: ``model.base_url``."""
    api_key: Credential | None = None
    api_key_file: Path | None = None
    """A file holding the key (relative paths: against the config file's directory). Read when the
    tenant's client is built: at the first call, after a kill of the tenant, after expiry."""

    @model_validator(mode="after")
    def _one_key(self) -> "TenantModelConfig":
        if (self.api_key is None) == (self.api_key_file is None):
            raise ValueError("set exactly one of api_key or api_key_file (a tenant never borrows the default key)")
        return self


class ModelConfig(_Section):
    base_url: str
    api_key: Credential
    name: str
    timeout_seconds: float = 60.0
    prices: dict[str, Price]
    tenants: dict[str, TenantModelConfig] = Field(default_factory=dict)
    """Tenant -> its own credentials; tenants not listed use ``base_url`` and ``api_key``."""
