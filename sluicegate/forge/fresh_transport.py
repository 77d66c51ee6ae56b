"""The transport of the forge's conditional freshness reads: gidgethub's aiohttp adapter on one session.

Why a second HTTP library beside httpx2: a freshness read (``ForgeClient.get_pull``, ``get_issue``) is
made for every admission the ledger cannot decide alone (``intake/forge_reader.py``), on the webhook
API's event loop (and by the worker: the dispatcher's re-checks, goal observations). httpx2 (with
httpcore2 and anyio under it) spent 1.6 ms of CPU per read against 0.5 ms for aiohttp, the same
gidgethub calls, 16 reads in flight on loopback (2026-12-07, ``docs/performance.md``). The other forge calls (the streamed diff and paged listings with their
progress beats, the writes, installation tokens) are an activity's, paced by the model, and stay on
httpx2; :class:`ForgeClient` owns both.

Kept like the httpx2 client:

* TLS trust: the same context (``httpx2.create_ssl_context``: its CA bundle, ``SSL_CERT_FILE``), built
  when the client is made, not on the event loop of the first admission;
* at most :data:`FORGE_CONNECTIONS` connections; a kept-alive connection reused only while idle under
  ``KEEPALIVE_EXPIRY_SECONDS``; the client's timeout on connecting (a free connection included) and on
  each read of the socket;
* redirects are not followed (a renamed repository's 301 is the forge's answer, as on httpx2);
* nothing from the environment: no netrc (aiohttp's ``trust_env`` reads it on every request, for two
  executor hops, and refuses a request carrying a token when the forge host has an entry), no proxy.
  **A proxy in the environment** (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``, either case) sends the
  freshness reads over httpx2 as well: aiohttp ignores ``ALL_PROXY`` and https proxy URLs and does not
  read ``NO_PROXY`` the way httpx does, so a proxied deployment keeps one proxy behaviour for every call;
* one repeat policy, ``call_forge``'s (a read dropped with its connection is sent once more). aiohttp's
  own repeat of an idempotent request is turned off (``_retry_connection``, what aiohttp's test client
  sets; the version is pinned and ``tests/activities/test_forge_dropped_connections.py`` counts the
  requests): with both, a dropped read went out four times, and aiohttp's repeat after the session was
  closed failed on an assertion instead of answering. A body cut short or a malformed answer is
  ``connection failed`` and not repeated (httpx2 repeats those once);
* a failure's text, which reaches receipts and the webhook's answer, carries no request header
  (:func:`described`).

aiohttp binds a session to the running event loop, so the session is made on the first read and
closed with the client; a read after the close raises ``RuntimeError`` as httpx does, and so does a read
from another event loop than the first one (no caller does that: each makes its client in its loop).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping
from typing import Any

import aiohttp
import httpx2
from gidgethub import abc as gh_abc
from gidgethub.aiohttp import GitHubAPI as AiohttpGitHubAPI
from gidgethub.httpx import GitHubAPI as HttpxGitHubAPI

from sluicegate.forge.cache import FreshnessCache
from sluicegate.web.client_pools import KEEPALIVE_EXPIRY_SECONDS

__all__ = ["DROPPED", "FAILED", "FORGE_CONNECTIONS", "FreshReads", "PROXY_VARIABLES", "REFUSED", "TIMED_OUT",
           "described", "named_proxies", "proxied"]

log = logging.getLogger("sluicegate.forge")

FORGE_CONNECTIONS = 100
"""The most connections open at once, as the httpx2 pool's (``client_pools.FORGE_POOL``: its
``max_connections`` is typed optional, so it is not read from there)."""

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
"""Any of these set (either case) sends the freshness reads over httpx2 too (module docstring)."""

TIMED_OUT = (aiohttp.ServerTimeoutError,)
"""No connection or no answer within the client's timeout (connecting, a free connection, a socket read)."""

REFUSED = (aiohttp.ClientConnectorError,)
"""No connection could be made (refused, no route, TLS): nothing was sent; not a drop."""

DROPPED = (aiohttp.ServerDisconnectedError, aiohttp.ClientConnectionResetError, aiohttp.ClientOSError)
"""The connection was closed under the request (the server's idle timeout fired as it went out): no
answer, nothing about the forge's health. ``call_forge`` tests :data:`REFUSED` first (a kind of
``ClientOSError``)."""

FAILED = (aiohttp.ClientError,)
"""Any other transport failure (a body cut short, a malformed answer)."""


def described(exc: BaseException) -> str:
    """A transport failure as it may be shown: in a ``ForgeError``'s message, which reaches receipts and the
    webhook's answer (GitHub keeps it under "Recent deliveries"). An aiohttp error by its class and its
    ``str()``, never its ``repr()``: a ``ClientResponseError``'s (a malformed answer) holds the request's
    headers, the token among them. Any other exception by its ``repr()`` (httpx2's hold only their message)."""
    if isinstance(exc, aiohttp.ClientError):
        return f"{type(exc).__name__}({str(exc)!r})"
    return repr(exc)


def named_proxies(environ: Mapping[str, str] | None = None) -> list[str]:
    """The :data:`PROXY_VARIABLES` the environment sets (either case, non-empty)."""
    env = os.environ if environ is None else environ
    return [name for name in PROXY_VARIABLES if env.get(name) or env.get(name.lower())]


def proxied(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the environment names a proxy (then httpx2 carries the freshness reads too)."""
    return bool(named_proxies(environ))


class _NoRedirects(AiohttpGitHubAPI):
    """gidgethub's aiohttp adapter, not following redirects (aiohttp's default does; httpx2's does not)."""

    async def _request(self, method: str, url: str, headers: Mapping[str, str],
                       body: bytes = b"") -> tuple[int, Mapping[str, str], bytes]:
        async with self._session.request(method, url, headers=headers, data=body or None,  # no content-type on a GET
                                         allow_redirects=False) as response:
            return response.status, response.headers, await response.read()


class FreshReads:
    """The gidgethub client of the conditional reads: on an aiohttp session made on first use, or on
    ``http`` (the forge client's httpx2 client) when the environment names a proxy."""

    def __init__(self, base_url: str, user_agent: str, timeout_seconds: float, cache: FreshnessCache,
                 http: httpx2.AsyncClient) -> None:
        self._base_url = base_url
        self._user_agent = user_agent
        self._timeout = timeout_seconds
        self._cache = cache
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self._api: gh_abc.GitHubAPI | None = None
        self._ssl = None  # None: over httpx2 (a proxy), ``self._api`` made here; else aiohttp's TLS context
        if proxies := named_proxies():
            self._api = HttpxGitHubAPI(http, user_agent, base_url=base_url, cache=cache)
            log.info("forge freshness reads go over httpx2: a proxy is named in the environment (%s)",
                     ", ".join(proxies))
        else:
            self._ssl = httpx2.create_ssl_context(trust_env=True)
            log.info("forge freshness reads go over aiohttp (no proxy in the environment)")

    def api(self) -> Any:
        """The client; the aiohttp session is made now if this is the first read (in the running loop)."""
        if self._closed:
            raise RuntimeError("the forge client has been closed")
        if self._ssl is None:
            return self._api
        loop = asyncio.get_running_loop()
        if self._api is None:
            connector = aiohttp.TCPConnector(limit=FORGE_CONNECTIONS, keepalive_timeout=KEEPALIVE_EXPIRY_SECONDS,
                                             ssl=self._ssl)
            timeout = aiohttp.ClientTimeout(total=None, connect=self._timeout, sock_read=self._timeout)
            self._session = aiohttp.ClientSession(connector=connector, timeout=timeout, trust_env=False)
            self._session._retry_connection = False  # one repeat policy: call_forge's (module docstring)
            self._api = _NoRedirects(self._session, self._user_agent, base_url=self._base_url, cache=self._cache)
            self._loop = loop
        elif loop is not self._loop:
            raise RuntimeError("the forge client's freshness reads are bound to the event loop of its first read")
        return self._api

    async def aclose(self) -> None:
        self._closed = True
        if self._session is not None:
            await self._session.close()
