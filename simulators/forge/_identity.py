"""Who sent a forge request: the login that authors its comments and owns its rate-limit budget.

* the static token (``--token``) is the bot user ``--commenter`` (default ``sluicegate-bot``);
* tokens registered with ``POST /_sim/users`` ``{"token", "login"}`` are other users (a reviewer,
  or an attacker planting a marker), accepted whatever else is configured;
* a GitHub App installation token (``ghs_``) is the App's bot, ``<slug>[bot]`` (``_apps``);
* with neither a static token nor an App configured (open mode) any other request is the
  commenter, counted against the anonymous budget.

Refusals are GitHub's: 401 ``Bad credentials`` for an unknown token once any credential is
configured; an installation token outside its scope is refused by ``_apps`` (401/403).
"""

from __future__ import annotations

import hmac
import threading
import zlib

from fastapi.responses import JSONResponse

from simulators.forge._apps import GitHubApps, presented_token
from simulators.forge._ratelimits import Caller
from simulators.forge._render import error_body

__all__ = ["Users", "identify", "user_caller"]


def user_caller(login: str) -> Caller:
    return Caller(login, f"user:{login.lower()}", f"user ID {zlib.crc32(login.encode())}")


class Users:
    """Tokens of users other than the bot (cleared on reset)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_token: dict[str, str] = {}

    def add(self, token: object, login: object) -> None:
        """``token`` and ``login`` come straight from a control request's JSON: checked here."""
        if not isinstance(token, str) or not token.strip() or not isinstance(login, str) or not login.strip():
            raise ValueError("a user needs a non-empty 'token' and 'login'")
        with self._lock:
            self._by_token[token.strip()] = login.strip()

    def login_for(self, token: str | None) -> str | None:
        if token is None:
            return None
        with self._lock:
            return next((login for known, login in self._by_token.items()
                         if hmac.compare_digest(known.encode(), token.encode())), None)

    def list(self) -> list[str]:
        with self._lock:
            return sorted(self._by_token.values())

    def clear(self) -> None:
        with self._lock:
            self._by_token.clear()


def identify(header: str | None, method: str, path: str, *, static_token: str | None, commenter: str,
             users: Users, apps: GitHubApps) -> Caller | JSONResponse:
    """The caller of an API request, or the refusal to answer."""
    presented = presented_token(header)
    if static_token is not None and presented is not None and \
            hmac.compare_digest(presented.encode(), static_token.encode()):
        return user_caller(commenter)
    login = users.login_for(presented)
    if login is not None:
        return user_caller(login)
    if apps.enabled and presented is not None and presented.startswith("ghs_"):
        refused = apps.authorize(presented, method, path)
        if refused is not None:
            return JSONResponse(error_body(*refused), status_code=refused[0])
        return apps.caller_for(presented)
    if static_token is not None or apps.enabled:
        return JSONResponse(error_body(401, "Bad credentials"), status_code=401)
    return Caller(commenter, "anonymous", "127.0.0.1")
