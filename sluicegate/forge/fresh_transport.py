"""The transport of the forge's conditional freshness reads: gidgethub's aiohttp adapter on one session.

Why a second HTTP library beside httpx2: a freshness read (``ForgeClient.get_pull``, ``get_issue``) is
made for every admission the ledger cannot decide alone (``intake/forge_reader.py``), on the webhook
API's event loop. httpx2 (with httpcore2 and anyio under it) spent 1.6 ms of CPU per read against
0.5 ms for aiohttp, the same gidgethub calls, 16 reads in flight on loopback; in the webhook API that
was 17 ms of CPU per admission down to 14 (2026-12-07, ``docs/performance.md``). The other forge
calls (the streamed diff and paged listings with their progress beats, the writes, installation
tokens) are an activity's, paced by the model, and stay on httpx2; :class:`ForgeClient` owns both.

Parity with the httpx2 client, so moving a read between them changes nothing an operator sees:
the same TLS trust (``httpx2.create_ssl_context``: its CA bundle and ``SSL_CERT_FILE``), proxies
from the environment (``trust_env``, httpx's default), at most :data:`FORGE_CONNECTIONS` connections,
a kept-alive connection reused only while idle under ``KEEPALIVE_EXPIRY_SECONDS``, and the client's
timeout on connecting (a free connection included) and on each read of the socket, and one repeat
policy: ``call_forge``'s (a read dropped with its connection is sent once more). aiohttp's own repeat
of an idempotent request is turned off (``_retry_connection``, what aiohttp's test client sets; the
version is pinned and ``tests/activities/test_forge_dropped_connections.py`` counts the requests):
with both, a dropped read went out four times, and aiohttp's repeat after the session was closed
failed on an assertion instead of answering.

aiohttp binds a session to the running event loop, so the session is made on the first read and
closed with the client; a read after the close raises ``RuntimeError`` as httpx does.
"""

from __future__ import annotations

import aiohttp
import httpx2
from gidgethub.aiohttp import GitHubAPI

from sluicegate.forge.cache import FreshnessCache
from sluicegate.web.client_pools import KEEPALIVE_EXPIRY_SECONDS

__all__ = ["DROPPED", "FAILED", "FORGE_CONNECTIONS", "FreshReads", "REFUSED", "TIMED_OUT"]

FORGE_CONNECTIONS = 100
"""The most connections open at once, as the httpx2 pool's (``client_pools.FORGE_POOL``)."""

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


class FreshReads:
    """The gidgethub client of the conditional reads, on an aiohttp session made on first use."""

    def __init__(self, base_url: str, user_agent: str, timeout_seconds: float, cache: FreshnessCache) -> None:
        self._base_url = base_url
        self._user_agent = user_agent
        self._timeout = timeout_seconds
        self._cache = cache
        self._session: aiohttp.ClientSession | None = None
        self._api: GitHubAPI | None = None
        self._closed = False

    def api(self) -> GitHubAPI:
        """The client; the session is made now if this is the first read (in the running loop)."""
        if self._closed:
            raise RuntimeError("the forge client has been closed")
        if self._api is None:
            connector = aiohttp.TCPConnector(limit=FORGE_CONNECTIONS, keepalive_timeout=KEEPALIVE_EXPIRY_SECONDS,
                                             ssl=httpx2.create_ssl_context(trust_env=True))
            timeout = aiohttp.ClientTimeout(total=None, connect=self._timeout, sock_read=self._timeout)
            self._session = aiohttp.ClientSession(connector=connector, timeout=timeout, trust_env=True)
            self._session._retry_connection = False  # one repeat policy: call_forge's (module docstring)
            self._api = GitHubAPI(self._session, self._user_agent, base_url=self._base_url, cache=self._cache)
        return self._api

    async def aclose(self) -> None:
        self._closed = True
        if self._session is not None:
            await self._session.close()
