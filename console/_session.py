"""Console sessions: a signed cookie naming the actor, with a CSRF token, bound to the actor's token.

The cookie holds ``{actor, csrf, token fingerprint}`` signed with ``console.session_key``
(``itsdangerous``, timestamped): nothing in it is secret, nothing in it can be changed without
the key, and it expires after ``console.session_max_age_seconds``. Attributes: ``HttpOnly`` (no
script reads it), ``SameSite=Strict`` (no other site's page sends it), ``Path=/console``, and
``Secure`` unless ``console.secure_cookie`` is off (plain HTTP on loopback only).

Failure modes written against:

* A stolen or leaked actor token: rotating the token in the config ends every session signed
  in with it — each request recomputes the token's fingerprint (an HMAC under the session key,
  so the cookie does not carry a plain hash of the token) and compares.
* An actor removed from the config: the session names nobody any more and is refused.
* Session-key rotation: ``console.session_old_keys`` keeps sessions signed with a retired key
  valid until they expire; new cookies are signed with ``session_key``.
* Login CSRF (another site posting its own token into the sign-in form): the sign-in form
  carries a nonce that must match a short-lived ``SameSite=Strict`` cookie set with the form.
* Stateless sessions cannot be revoked one by one: sign-out clears the cookie in the browser;
  to cut a session elsewhere, rotate the actor's token (or the session key: everyone).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from itsdangerous import BadSignature, URLSafeTimedSerializer

from sluicegate.config.console import ConsoleConfig

COOKIE = "sg_console"
SIGNIN_COOKIE = "sg_console_signin"
FLASH_COOKIE = "sg_console_flash"
COOKIE_PATH = "/console"
SIGNIN_MAX_AGE = 3600
FLASH_MAX_AGE = 120
MAX_COOKIE_CHARS = 2048
"""A cookie value longer than any we issue is refused before it is verified."""


@dataclass(frozen=True)
class Session:
    actor: str
    csrf: str


class SessionSigner:
    def __init__(self, config: ConsoleConfig) -> None:
        if config.session_key is None:
            raise ValueError("console.session_key is not set")
        # itsdangerous signs with the last key and verifies with any: oldest first, newest last.
        self._keys = [k.get_secret_value().encode() for k in config.session_old_keys] + [
            config.session_key.get_secret_value().encode()]
        self.max_age = config.session_max_age_seconds
        self.secure = config.secure_cookie
        self._sessions = URLSafeTimedSerializer(self._keys, salt="sluicegate.console.session")
        self._signin = URLSafeTimedSerializer(self._keys, salt="sluicegate.console.signin")
        self._flash = URLSafeTimedSerializer(self._keys, salt="sluicegate.console.flash")

    def _fingerprints(self, token: str) -> set[str]:
        return {hmac.new(k, token.encode(), hashlib.sha256).hexdigest()[:32] for k in self._keys}

    def issue(self, actor: str, token: str) -> tuple[str, Session]:
        """A new session for ``actor`` who just presented ``token``: the cookie value and the session."""
        session = Session(actor, secrets.token_urlsafe(24))
        fingerprint = hmac.new(self._keys[-1], token.encode(), hashlib.sha256).hexdigest()[:32]
        return self._sessions.dumps({"a": actor, "c": session.csrf, "f": fingerprint}), session

    def read(self, cookie: str | None, actors: Mapping[str, Any]) -> Session | None:
        """The session a cookie holds, if it is ours, unexpired, and its actor still holds that token."""
        data = _loads(self._sessions, cookie, self.max_age)
        if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in ("a", "c", "f")):
            return None
        actor = actors.get(data["a"])
        if actor is None or data["f"] not in self._fingerprints(actor.token.get_secret_value()):
            return None
        return Session(data["a"], data["c"])

    def signin_nonce(self) -> tuple[str, str]:
        """``(cookie value, form value)`` for one sign-in form."""
        nonce = secrets.token_urlsafe(24)
        return self._signin.dumps(nonce), nonce

    def signin_nonce_matches(self, cookie: str | None, presented: str | None) -> bool:
        nonce = _loads(self._signin, cookie, SIGNIN_MAX_AGE)
        return isinstance(nonce, str) and _same(nonce, presented)

    def flash(self, message: str) -> str:
        return self._flash.dumps(message[:500])

    def read_flash(self, cookie: str | None) -> str | None:
        message = _loads(self._flash, cookie, FLASH_MAX_AGE)
        return message if isinstance(message, str) else None

    def cookie_args(self, max_age: int) -> dict[str, Any]:
        return {"max_age": max_age, "path": COOKIE_PATH, "httponly": True, "samesite": "strict",
                "secure": self.secure}


def _loads(serializer: URLSafeTimedSerializer, cookie: str | None, max_age: int) -> Any:
    if not cookie or len(cookie) > MAX_COOKIE_CHARS:
        return None
    try:
        return serializer.loads(cookie, max_age=max_age)
    except (BadSignature, ValueError):  # SignatureExpired is a BadSignature; ValueError: bad base64/JSON
        return None


def _same(expected: str, presented: str | None) -> bool:
    """Constant-time comparison that also takes non-ASCII input (``compare_digest`` on str refuses it)."""
    return bool(presented) and hmac.compare_digest(expected.encode(), (presented or "").encode("utf-8", "replace"))


def csrf_matches(expected: str, presented: str | None) -> bool:
    """Does the form's CSRF token equal the session's (``expected``)?"""
    return _same(expected, presented)
