"""``console:`` — the operator console the API serves at ``/console`` (``console/``).

The console signs its session cookies with ``session_key``; without one it is off (``/console``
answers a page saying so). The key is a :data:`SessionKey`: at least 32 characters, because
anyone holding it can mint a session for any actor. Like every secret, the published dev value
in ``temporal-dev.yaml`` is refused outside dev mode (``sluicegate/config/dev_guard.py``).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, SecretStr

from sluicegate.config.section import Section
from sluicegate.config.secret_fields import GENERATE_HINT

MIN_SESSION_KEY_CHARS = 32


def _session_key(value: SecretStr) -> SecretStr:
    if len(value.get_secret_value().strip()) < MIN_SESSION_KEY_CHARS:
        raise ValueError(f"must be at least {MIN_SESSION_KEY_CHARS} characters (generate one: {GENERATE_HINT})")
    return value


SessionKey = Annotated[SecretStr, AfterValidator(_session_key)]


class ConsoleConfig(Section):

    session_key: SessionKey | None = None
    """Signs console session cookies (``SLUICEGATE_CONSOLE_SESSION_KEY``); unset: the console is off."""
    session_old_keys: list[SessionKey] = Field(default_factory=list)
    """Retired keys still accepted for sessions signed before a rotation (new ones use ``session_key``)."""
    secure_cookie: bool = True
    """Send the session cookie over HTTPS only. Off only for plain HTTP on loopback (the dev stack)."""
    session_max_age_seconds: int = Field(default=8 * 3600, ge=60, le=7 * 24 * 3600)
    """A session older than this sends its actor back to sign in."""
    temporal_ui_url: str | None = None
    """Base URL of the Temporal UI for run links; unset: the dev server's ``http://<ip>:<ui_port>``."""
    page_size: int = Field(default=50, ge=5, le=200)
    """Rows per page of receipts (a request may ask for fewer, never more than 200)."""
