"""``forge:`` — the authoritative source and tool target (GitHub or the forge simulator).

A static ``token`` for every call, or a GitHub App (``app``) whose installation tokens are
minted per tenant and repository (``sluicegate/forge_auth.py``).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from sluicegate.secret_fields import Credential


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


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
        default_factory=lambda: {"pull_requests": "read", "issues": "write", "contents": "read"})
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
