"""``forge:`` — the authoritative source and tool target (GitHub or the forge simulator).

A static ``token`` for every call, or a GitHub App (``app``) whose installation tokens are
minted per tenant and repository (``sluicegate/forge/auth.py``). ``bot_login`` and the marker
secrets decide which comments reconcile may take as Sluicegate's own (``activities/markers.py``).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator, model_validator

MIN_MARKER_SECRET_CHARS = 16

from sluicegate.config.section import Section as _Section
from sluicegate.config.secret_fields import Credential




class ForgeAppConfig(_Section):
    """A GitHub App: each forge call gets an installation token scoped to one repository."""

    app_id: str = Field(coerce_numbers_to_str=True)
    """The App ID (a number; YAML may write it unquoted)."""
    private_key: Credential | None = None
    """The app's PEM private key (secret: set it from the environment)."""
    private_key_file: str | None = None
    installations: dict[str, Annotated[int, Field(gt=0)]] = Field(default_factory=dict)
    """Tenant -> installation id."""
    permissions: dict[str, Literal["read", "write"]] = Field(
        default_factory=lambda: dict[str, Literal["read", "write"]](pull_requests="read", issues="write", contents="read"))
    refresh_margin_seconds: float = Field(default=300, ge=0)
    """A cached installation token with less lifetime left than this is replaced."""

    @model_validator(mode="after")
    def _check(self) -> "ForgeAppConfig":
        if (self.private_key is None) == (self.private_key_file is None):
            raise ValueError("set exactly one of private_key (SLUICEGATE_FORGE_APP_PRIVATE_KEY) or "
                             "private_key_file (SLUICEGATE_FORGE_APP_PRIVATE_KEY_FILE)")
        if not self.installations:
            raise ValueError("installations must map every tenant to its installation id")
        return self


class ForgeConfig(_Section):
    base_url: str = "https://api.github.com"
    token: Credential | None = None
    """Static token for every call; unused when ``app`` is set."""
    timeout_seconds: float = 10.0
    app: ForgeAppConfig | None = None
    bot_login: str | None = None
    """The login Sluicegate's comments are posted as: the static token's user, or ``<app slug>[bot]``
    for a GitHub App. Reconcile trusts only comments by it (activities/markers.py); unset: none."""
    marker_secret: SecretStr | None = None
    """Signs the hidden marker of every comment (HMAC of its operation key); unset: no comment is
    trusted as Sluicegate's own after a crash (a review may be posted twice, never suppressed)."""
    marker_old_secrets: list[SecretStr] = Field(default_factory=list)
    """Retired marker secrets, still accepted when verifying (rotation)."""

    @field_validator("marker_secret", "marker_old_secrets")
    @classmethod
    def _long_enough(cls, value):
        for secret in value if isinstance(value, list) else [value]:
            if secret is not None and len(secret.get_secret_value()) < MIN_MARKER_SECRET_CHARS:
                raise ValueError(f"a marker secret needs at least {MIN_MARKER_SECRET_CHARS} characters")
        return value
