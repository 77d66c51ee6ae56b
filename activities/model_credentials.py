"""Model credentials per tenant: one cached ``openai`` client per tenant, revocable by a kill.

Each tenant's calls go out with the tenant's own key (``model.tenants.<t>``) or, for tenants
not listed, the default ``model.api_key``. :class:`ModelClients` builds a tenant's client on its
first call and keeps it; :meth:`ModelClients.revoke` (a tenant kill) and
:meth:`ModelClients.revoke_all` (a global kill) close and drop cached clients, so nothing the
worker holds can call the model for that tenant until a later call, after the unkill, builds a new
client — reading the key file again (a key rotated during the kill takes effect then).

**Short-lived keys (the hook).** Where a provider can mint short-lived keys (a token-exchange
endpoint trading the configured long-lived credential, or a workload identity, for a key valid for
minutes), pass ``exchange=`` to :class:`ModelClients`: an async callable ``(tenant, configured)
-> IssuedKey``. It runs whenever a tenant's client is built; the issued key's ``expires_at`` makes
the client be rebuilt (another exchange) ``refresh_margin_seconds`` before it lapses. The default,
:func:`static_key`, presents the configured key and never expires. The exchange runs in the worker
and sees only the configured credential of the tenant it is asked for.

Failure modes this module is written against:

* tenant A's run presenting tenant B's key: the client is chosen by the request's tenant only, and
  a tenant entry must carry its own key (``sluicegate/config/model.py``);
* a key file that is missing or empty: ``ModelKeyUnavailable`` naming the setting and the path
  (never its content), raised as a non-retryable activity error by the model activity;
* a revoked client still used by a call that started before the kill: it is closed, so that call
  fails and its retry is refused by the kill check.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Awaitable, Callable, Protocol

from openai import AsyncOpenAI, DefaultAsyncHttpxClient
from pydantic import SecretStr

from sluicegate.errors import SluicegateError
from sluicegate.web.client_pools import MODEL_POOL

DEFAULT_TENANT = ""
"""Cache slot of the default credentials (tenants not listed under ``model.tenants``)."""


def openai_client(base_url: str, api_key: str, timeout_seconds: float) -> AsyncOpenAI:
    """The ``openai`` client every model call goes through: its own retries off (Temporal owns them:
    ``activities.model``), idle connections expired before a server's 5 s default closes them
    (``sluicegate.web.client_pools``)."""
    return AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout_seconds,
                       http_client=DefaultAsyncHttpxClient(limits=MODEL_POOL))


class ModelKeyUnavailable(SluicegateError):
    """A tenant's configured key cannot be read (missing or empty key file)."""


@dataclass(frozen=True)
class ModelCredential:
    """What the configuration says a tenant presents, before any exchange."""

    base_url: str
    api_key: SecretStr
    source: str
    """``model.api_key`` or ``model.tenants.<t>.api_key[_file]``: for messages, never the value."""


@dataclass(frozen=True)
class IssuedKey:
    api_key: SecretStr
    expires_at: float | None = None
    """Epoch seconds after which the key is no longer valid; ``None``: it does not expire."""


class KeyExchange(Protocol):
    def __call__(self, tenant: str, configured: ModelCredential) -> Awaitable[IssuedKey]: ...


async def static_key(tenant: str, configured: ModelCredential) -> IssuedKey:
    """The default exchange: present the configured key as it is."""
    return IssuedKey(configured.api_key)


def credentials_from_settings(model, resolve: Callable[[Path], Path]) -> Callable[[str], ModelCredential]:
    """``tenant -> ModelCredential`` for a ``ModelConfig``; ``resolve`` makes key-file paths absolute."""

    def lookup(tenant: str) -> ModelCredential:
        own = model.tenants.get(tenant)
        if own is None:
            return ModelCredential(model.base_url, model.api_key, "model.api_key")
        base_url = own.base_url or model.base_url
        if own.api_key is not None:
            return ModelCredential(base_url, own.api_key, f"model.tenants.{tenant}.api_key")
        path = resolve(own.api_key_file)
        where = f"model.tenants.{tenant}.api_key_file ({path})"
        try:
            text = path.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ModelKeyUnavailable(f"cannot read {where}: {exc.strerror or exc}") from None
        if not text:
            raise ModelKeyUnavailable(f"{where} is empty")
        return ModelCredential(base_url, SecretStr(text), f"model.tenants.{tenant}.api_key_file")

    return lookup


@dataclass
class _Cached:
    client: AsyncOpenAI
    expires_at: float | None
    kill_mark: str | None = None
    """The newest kill covering the tenant when the client was built (``for_tenant``)."""


class ModelClients:
    """One ``AsyncOpenAI`` client per tenant with the tenant's credentials, built on first use."""

    def __init__(self, credentials: Callable[[str], ModelCredential], timeout_seconds: float,
                 exchange: KeyExchange = static_key, own_key_tenants: frozenset[str] = frozenset(),
                 refresh_margin_seconds: float = 60.0, clock: Callable[[], float] = time.time) -> None:
        """``own_key_tenants``: tenants with credentials of their own; every other tenant shares the
        default slot (one client for all of them)."""
        self._credentials = credentials
        self._timeout = timeout_seconds
        self._exchange = exchange
        self._own = own_key_tenants
        self._margin = refresh_margin_seconds
        self._clock = clock
        self._cache: dict[str, _Cached] = {}
        self._lock = asyncio.Lock()

    @classmethod
    def from_settings(cls, settings, exchange: KeyExchange = static_key) -> "ModelClients":
        return cls(credentials_from_settings(settings.model, settings.path), settings.model.timeout_seconds,
                   exchange, frozenset(settings.model.tenants))

    def slot(self, tenant: str | None) -> str:
        return tenant if tenant in self._own else DEFAULT_TENANT

    async def for_tenant(self, tenant: str | None, kill_mark: str | None = None) -> AsyncOpenAI:
        """The tenant's client. ``kill_mark``: id of the newest kill (lifted or not) covering the
        tenant; a client built under another mark is rebuilt, so a kill and unkill this worker never
        saw a call for still re-reads the key (a key rotated during the kill is the one used)."""
        slot = self.slot(tenant)
        async with self._lock:
            cached = self._cache.get(slot)
            fresh = cached is not None and (cached.expires_at is None
                                            or self._clock() < cached.expires_at - self._margin)
            if fresh and cached is not None and cached.kill_mark == kill_mark:
                return cached.client
            if cached is not None:
                del self._cache[slot]
                await cached.client.close()
            configured = await asyncio.to_thread(self._credentials, slot)
            issued = await self._exchange(slot, configured)
            client = openai_client(configured.base_url, issued.api_key.get_secret_value(), self._timeout)
            self._cache[slot] = _Cached(client, issued.expires_at, kill_mark)
            return client

    async def revoke(self, tenant: str | None) -> bool:
        """Drop and close the tenant's cached client (a tenant kill); True if one was cached.
        A tenant without credentials of its own shares the default client, which is left alone:
        other tenants use it (the kill itself still refuses every call of the killed tenant)."""
        if tenant not in self._own:
            return False
        async with self._lock:
            cached = self._cache.pop(tenant, None)
        if cached is not None:
            await cached.client.close()
        return cached is not None

    async def revoke_all(self) -> int:
        """Drop and close every cached client (a global kill); returns how many."""
        async with self._lock:
            dropped, self._cache = list(self._cache.values()), {}
        for cached in dropped:
            await cached.client.close()
        return len(dropped)

    def cached_slots(self) -> set[str]:
        return set(self._cache)

    async def close(self) -> None:
        await self.revoke_all()
