"""Forge credentials: GitHub App installation tokens, one repository and a few permissions each.

How a call gets its token: the call's tenant picks the installation (``forge.app.installations``;
a call that names no tenant uses the installation of the tenant named like the repository
owner). The app's JWT (RS256, ``gidgethub.apps.get_jwt``: issued 60 s in the past, valid 10
minutes) is exchanged at ``POST /app/installations/{id}/access_tokens`` for a token limited to
the call's ONE repository and ``forge.app.permissions``. GitHub makes it expire after an hour.
Tokens are cached per (installation, repository) and replaced once less than
``refresh_margin_seconds`` of their lifetime is left; concurrent callers for the same key wait
for one exchange (an ``asyncio.Lock`` per key). Without ``forge.app`` the one static
``forge.token`` is used for every call, as before.

Failure modes:

* a tenant with no installation, or no tenant and no installation for the owner ->
  non-retryable :class:`ForgeError` naming it; there is no fallback to another tenant's
  installation.
* the exchange refused -> non-retryable :class:`ForgeError` saying which setting to check:
  401 (wrong key or app id, or a skewed clock), 404 (installation unknown), 403/422 (the
  repository is not in the installation, or a permission is not granted to the app).
* 5xx, 429, timeouts during the exchange -> retryable; nothing is cached.
* a forge 401 on a cached token (revoked, or expired early) -> :meth:`InstallationTokens.discard`
  drops it and :class:`ForgeClient` repeats the call once with a new token.
* an unreadable or non-RSA key, or a tenant named in ``sources``/``schedules``/``goals.tenant``
  without an installation -> ``ConfigError`` when the process starts
  (``sluicegate.services.forge_credentials.credentials_from_settings``: this module reads no settings).

Token values and the key never appear in logs or error messages.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Mapping

import httpx2
from gidgethub.apps import get_jwt
from gidgethub.httpx import GitHubAPI

from sluicegate.forge.client import USER_AGENT, ForgeError, StaticToken, call_forge
from sluicegate.web.client_pools import FORGE_POOL

__all__ = ["DEFAULT_PERMISSIONS", "InstallationTokens", "StaticToken"]

log = logging.getLogger(__name__)

DEFAULT_PERMISSIONS: Mapping[str, str] = {"pull_requests": "read", "issues": "write", "contents": "read"}
_REFUSAL_HINTS = {
    401: "the app's JWT was refused: check forge.app.app_id, the private key and the clock",
    403: "check the app's permissions against forge.app.permissions",
    404: "installation not found: check forge.app.installations",
    422: "the repository is not in the installation, or forge.app.permissions asks for more than the app has",
}


@dataclass(frozen=True)
class _Minted:
    token: str = field(repr=False)
    expires_at: float
    """Epoch seconds, as the forge reported them."""


class InstallationTokens:
    """GitHub App installation tokens per (installation, repository), cached until near expiry."""

    def __init__(self, base_url: str, *, app_id: str, private_key: str, installations: Mapping[str, int],
                 permissions: Mapping[str, str] = DEFAULT_PERMISSIONS, refresh_margin_seconds: float = 300.0,
                 timeout_seconds: float = 10.0) -> None:
        self._app_id = str(app_id)
        self._private_key = private_key
        self._installations = dict(installations)
        self._permissions = dict(permissions)
        self._margin = refresh_margin_seconds
        self._http = httpx2.AsyncClient(timeout=timeout_seconds, limits=FORGE_POOL)
        self._gh = GitHubAPI(self._http, USER_AGENT, base_url=base_url.rstrip("/"))
        self._cache: dict[tuple[int, str, str], _Minted] = {}
        self._locks: dict[tuple[int, str, str], asyncio.Lock] = {}

    def installation_for(self, tenant: str | None, owner: str) -> int:
        """The installation id for ``tenant`` (or, with no tenant, for a tenant named ``owner``)."""
        name = tenant or owner
        installation = self._installations.get(name)
        if installation is None:
            who = f"tenant {name!r}" if tenant else f"owner {owner!r} (the call named no tenant)"
            raise ForgeError(f"no GitHub App installation for {who}: add it to forge.app.installations",
                             None, False)
        return installation

    def _key(self, tenant: str | None, owner: str, repo: str) -> tuple[int, str, str]:
        return self.installation_for(tenant, owner), owner.lower(), repo.lower()

    def _usable(self, key: tuple[int, str, str]) -> _Minted | None:
        minted = self._cache.get(key)
        if minted is not None and minted.expires_at - time.time() > self._margin:
            return minted
        return None

    async def token_for(self, tenant: str | None, owner: str, repo: str) -> str:
        key = self._key(tenant, owner, repo)
        minted = self._usable(key)
        if minted is None:
            async with self._locks.setdefault(key, asyncio.Lock()):
                minted = self._usable(key)  # another caller may have minted it while we waited
                if minted is None:
                    minted = await self._mint(key[0], owner, repo)
                    self._forget_expired()
                    self._cache[key] = minted
        return minted.token

    def discard(self, tenant: str | None, owner: str, repo: str, token: str) -> bool:
        try:
            key = self._key(tenant, owner, repo)
        except ForgeError:
            return False
        if (cached := self._cache.get(key)) is not None and cached.token == token:
            del self._cache[key]
            log.info("installation token for %s/%s (installation %d) was refused; it will be replaced",
                     owner, repo, key[0])
        return True

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _mint(self, installation: int, owner: str, repo: str) -> _Minted:
        jwt = get_jwt(app_id=self._app_id, private_key=self._private_key)
        request = {"repositories": [repo], "permissions": self._permissions}
        what = f"installation token for {owner}/{repo} (installation {installation})"
        try:
            # Minting twice is harmless (the first token expires unused): a dropped connection is repeated.
            body = await call_forge(lambda: self._gh.post(
                f"/app/installations/{installation}/access_tokens", data=request, jwt=jwt), repeat_dropped=True)
        except ForgeError as exc:
            if exc.retryable:
                raise ForgeError(f"cannot mint an {what} yet: {exc.message}", exc.status, True,
                                 exc.retry_after, rate_limited=exc.rate_limited) from None
            hint = _REFUSAL_HINTS.get(exc.status or 0, "see the message")
            raise ForgeError(f"GitHub App {self._app_id} was refused an {what}: {exc.message} ({hint})",
                             exc.status, False) from None
        minted = _parse(body)
        if minted is None:
            raise ForgeError(f"malformed answer minting an {what}: no token/expires_at", None, False)
        log.info("minted an %s, permissions %s, expires %s", what, self._permissions,
                 datetime.fromtimestamp(minted.expires_at, UTC).isoformat(timespec="seconds"))
        return minted

    def _forget_expired(self) -> None:
        now = time.time()
        for key in [k for k, m in self._cache.items() if m.expires_at <= now]:
            del self._cache[key]  # the lock stays: a waiter may hold it (one small lock per repository)


def _parse(body: Any) -> _Minted | None:
    if not isinstance(body, dict) or not isinstance(body.get("token"), str):
        return None
    try:
        expires_at = datetime.fromisoformat(str(body.get("expires_at"))).timestamp()
    except ValueError:
        return None
    return _Minted(body["token"], expires_at)
