"""``codec_server:`` — the codec server the Temporal UI and CLI decode encrypted payloads through.

It holds the payload keys, so it refuses to run without a bearer token (``sluicegate/temporal/codec_server.py``).
"""

from __future__ import annotations

from pydantic import Field, SecretStr, field_validator

from sluicegate.config.section import Section

MIN_TOKEN_CHARS = 16


class CodecServerConfig(Section):
    """Where ``python -m sluicegate.temporal.codec_server`` listens and who may call it."""


    host: str = "127.0.0.1"
    port: int = 8888
    token: SecretStr | None = None
    """Bearer token required on /encode and /decode (``SLUICEGATE_CODEC_TOKEN``); no token, no server."""
    ui_origins: list[str] = Field(default_factory=list)
    """Browser origins allowed by CORS (the Temporal UI); empty: the dev server's UI."""
    max_body_bytes: int = Field(default=16 * 1024 * 1024, gt=0)

    @field_validator("token")
    @classmethod
    def _long_enough(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < MIN_TOKEN_CHARS:
            raise ValueError(f"the codec token needs at least {MIN_TOKEN_CHARS} characters")
        return value
