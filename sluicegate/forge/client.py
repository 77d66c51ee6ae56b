"""Client for the forge (GitHub's REST API or the forge simulator), built on gidgethub.

Every failure surfaces as :class:`ForgeError`, classified by the one forge error mapper
(``sluicegate.forge.errors``): rate limited (primary or secondary; retry after the server's
delay), unavailable (5xx, timeouts, connection errors) or rejected (other 4xx). Timeouts and
5xx on a write are ambiguous — the forge may have committed — so callers that mutate must
reconcile before retrying (see ``activities.gateway``). A read sent on a kept-alive connection the
forge closed meanwhile (its idle timeout fired as the request went out) is sent once more on another
connection (``call_forge(repeat_dropped=True)``; reads only: a write may have been applied).

Freshness reads (:meth:`ForgeClient.get_pull`, :meth:`ForgeClient.get_issue`) go over aiohttp (over
httpx2 when the environment names a proxy), every other call over httpx2
(``sluicegate.forge.fresh_transport`` says why and how the two are kept alike).
They are conditional requests: gidgethub's cache hook
with a bounded LRU remembers each pull's ``ETag`` and sends ``If-None-Match``; GitHub answers an
unchanged pull ``304 Not Modified``, which does not count against the installation's rate limit.
The cache is per client (per process), per tenant, and keeps only the fields freshness and goal
observations read (``sluicegate.forge.cache``); ``get_pull`` returns those fields, 200 or 304 alike.

Credentials come per call from a :class:`ForgeCredentials` (the tenant and repository of the
call pick the token): :class:`StaticToken` sends one configured token everywhere;
``sluicegate.forge.auth.InstallationTokens`` mints GitHub App installation tokens scoped to
the call's repository. A 401 answered to a token the credentials can renew (an installation
token revoked or expired early) drops that token and repeats the request once with a fresh
one: a refused request was not applied, so repeating a write is safe. A 401 after a listing
has already yielded items is raised as retryable instead.

Progress: the diff read, the paged listings and the comment post take an optional ``progress``
(``sluicegate.forge.progress_reads.ProgressSink``; the activities pass their heartbeat): the diff
(and the comment post's answer) is streamed with one beat per body chunk, listings beat once per page, every try of a request
(the fresh-token repeat included) beats with its number, and waiting for an answer to begin beats
on a timer for at most the client's timeout. A call stuck mid-body stops beating.
"""

from __future__ import annotations

import json
from typing import Any, AsyncIterator, Awaitable, Callable, Protocol

import gidgethub
import httpx2
from gidgethub import sansio
from gidgethub.httpx import GitHubAPI

from sluicegate.forge import errors as forge_errors
from sluicegate.forge.cache import FreshnessCache, issue_fields, pull_fields, scoped
from sluicegate.forge.errors import ForgeError
from sluicegate.forge import fresh_transport
from sluicegate.forge.fresh_transport import FreshReads
from sluicegate.forge.progress_reads import NO_PROGRESS, ProgressSink, read_pages, read_streamed
from sluicegate.web.client_pools import FORGE_POOL

__all__ = ["ForgeClient", "ForgeCredentials", "ForgeError", "StaticToken", "call_forge"]

DIFF_MEDIA_TYPE = "application/vnd.github.diff"
USER_AGENT = "sluicegate"
CONDITIONAL_CACHE_SIZE = 4096
"""(tenant, pull request) pairs whose last ``ETag`` and freshness fields are remembered (least recently used
dropped first; a few hundred bytes each)."""


DROPPED_CONNECTION = (httpx2.RemoteProtocolError, httpx2.ReadError, httpx2.WriteError, *fresh_transport.DROPPED)
"""What a request sent on a kept-alive connection the server closed meanwhile fails with (the server's
idle timeout fired as the request went out): no answer, nothing about the forge's health."""


async def call_forge(coro_factory: Callable[[], Awaitable[Any]], *, write: bool = False,
                     repeat_dropped: bool = False) -> Any:
    """Await one gidgethub request, turning every failure into a :class:`ForgeError` (``forge_errors``).

    ``repeat_dropped``: a dropped connection (``DROPPED_CONNECTION``) is met by calling
    ``coro_factory`` once more, which the connection pool sends on another (or a new) connection.
    Only for an idempotent read whose factory makes a whole new request: never a write (it may have
    been applied), never a listing's ``__anext__`` (a failed generator ends, and would end the
    listing early). Timeouts and refused connections are not repeated: they say the forge is slow or
    down, and the caller's backoff is the answer to that."""
    tries = 2 if repeat_dropped and not write else 1
    dropped: ForgeError | None = None
    for attempt in range(1, tries + 1):
        try:
            return await coro_factory()
        except gidgethub.HTTPException as exc:  # RateLimitExceeded, BadRequest, GitHubBroken, redirects
            status = int(exc.status_code)
            message = str(exc) or getattr(exc.status_code, "phrase", "")
            raise forge_errors.from_response(status, getattr(exc, "headers", None), message, write=write) from None
        except (httpx2.TimeoutException, *fresh_transport.TIMED_OUT) as exc:
            raise forge_errors.from_transport(f"timed out: {fresh_transport.described(exc)}", write=write) from None
        except fresh_transport.REFUSED as exc:  # before DROPPED_CONNECTION: aiohttp's is a kind of its OSError
            raise forge_errors.from_transport(f"connection failed: {fresh_transport.described(exc)}", write=write) from None
        except DROPPED_CONNECTION as exc:
            dropped = forge_errors.from_transport(f"connection failed: {fresh_transport.described(exc)}", write=write)
            if attempt < tries:
                continue
            raise dropped from None
        except (httpx2.TransportError, *fresh_transport.FAILED) as exc:
            raise forge_errors.from_transport(f"connection failed: {fresh_transport.described(exc)}", write=write) from None
        except RuntimeError:  # the client was closed (shutdown) before the repeat went out
            if dropped is None:
                raise
            raise dropped from None
    raise AssertionError("unreachable: the last try returns or raises")


class ForgeCredentials(Protocol):
    """Where :class:`ForgeClient` gets the token for one call."""

    async def token_for(self, tenant: str | None, owner: str, repo: str) -> str | None:
        """The token to send for a call on ``owner/repo`` for ``tenant`` (None: unauthenticated)."""

    def discard(self, tenant: str | None, owner: str, repo: str, token: str) -> bool:
        """Forget ``token`` after the forge refused it; True if a fresh one can be obtained."""

    async def aclose(self) -> None:
        """Release what the credentials hold (HTTP clients)."""


class StaticToken:
    """One configured token (or none) for every tenant and repository; nothing to renew."""

    def __init__(self, token: str | None) -> None:
        self._token = token

    async def token_for(self, tenant: str | None, owner: str, repo: str) -> str | None:
        return self._token

    def discard(self, tenant: str | None, owner: str, repo: str, token: str) -> bool:
        return False

    async def aclose(self) -> None:
        return None


class ForgeClient:
    """Async client; one per process, closed with :meth:`aclose` (which also closes ``credentials``).

    Pass either ``token`` (one static token, the historical behaviour) or ``credentials``.
    Every method takes an optional ``tenant``: with GitHub App credentials it picks the
    installation (without it, the installation configured for a tenant named like the owner).
    """

    def __init__(self, base_url: str, token: str | None = None, timeout_seconds: float = 10.0, *,
                 credentials: ForgeCredentials | None = None) -> None:
        if token is not None and credentials is not None:
            raise ValueError("pass either token or credentials, not both")
        self.base_url = base_url.rstrip("/")
        self.timeout_seconds = timeout_seconds
        self._http = httpx2.AsyncClient(timeout=timeout_seconds, limits=FORGE_POOL)
        self._gh = GitHubAPI(self._http, USER_AGENT, base_url=self.base_url)
        # Freshness reads only: gidgethub keys its cache by URL (not Accept), so the diff read of the
        # same URL must never go through it; FreshnessCache adds the tenant. A 304 costs no rate limit.
        self.freshness_cache = FreshnessCache(CONDITIONAL_CACHE_SIZE)
        self._fresh = FreshReads(self.base_url, USER_AGENT, timeout_seconds, self.freshness_cache, self._http)
        self._credentials: ForgeCredentials = credentials if credentials is not None else StaticToken(token)

    async def aclose(self) -> None:
        try:
            await self._fresh.aclose()
        finally:
            try:
                await self._http.aclose()
            finally:
                await self._credentials.aclose()

    async def _send(self, tenant: str | None, owner: str, repo: str, request: Callable[[str | None], Awaitable[Any]],
                    *, write: bool, progress: ProgressSink = NO_PROGRESS) -> Any:
        """``request(token)``; once more with a fresh token if the forge refused a renewable one.
        ``write`` has no default: a read may be repeated on a dropped connection, a write never."""
        tenant = tenant or None
        token = await self._credentials.token_for(tenant, owner, repo)
        progress.beat(tries=1)
        try:
            return await call_forge(lambda: request(token), write=write, repeat_dropped=not write)
        except ForgeError as exc:
            if exc.status != 401 or token is None or not self._credentials.discard(tenant, owner, repo, token):
                raise
        token = await self._credentials.token_for(tenant, owner, repo)
        progress.beat(tries=2)
        return await call_forge(lambda: request(token), write=write, repeat_dropped=not write)

    def _pages(self, url: str, token: str | None, progress: ProgressSink) -> AsyncIterator[Any]:
        headers = sansio.create_headers(USER_AGENT, accept=sansio.accept_format(), oauth_token=token)
        return read_pages(self._http, self.base_url, url, headers, progress, self.timeout_seconds)

    async def _iterate(self, tenant: str | None, owner: str, repo: str, url: str,
                       progress: ProgressSink = NO_PROGRESS) -> AsyncIterator[Any]:
        """Every item of a paged listing; a refused token is renewed only before the first item."""
        tenant = tenant or None
        token = await self._credentials.token_for(tenant, owner, repo)
        progress.beat(tries=1)
        iterator = self._pages(url, token, progress)
        may_renew = True
        while True:
            try:
                item = await call_forge(iterator.__anext__)
            except StopAsyncIteration:
                return
            except ForgeError as exc:
                if exc.status != 401 or token is None or not self._credentials.discard(tenant, owner, repo, token):
                    raise
                if not may_renew:
                    raise ForgeError(f"{exc.message} (token refused in the middle of a listing; "
                                     "the next attempt gets a new one)", 401, True) from None
                may_renew = False
                token = await self._credentials.token_for(tenant, owner, repo)
                progress.beat(tries=2)
                iterator = self._pages(url, token, progress)
                continue
            may_renew = False
            yield item

    async def get_pull(self, owner: str, repo: str, number: int, *, tenant: str | None = None) -> dict[str, Any]:
        """The pull request's freshness fields (``forge_cache.PULL_FIELDS`` and ``head.sha``), read
        conditionally (``If-None-Match`` with this tenant's last ``ETag``: an unchanged pull answers
        304 and the cached fields are returned)."""
        async def read(token: str | None) -> Any:
            with scoped(tenant):
                return await self._fresh.api().getitem(f"/repos/{owner}/{repo}/pulls/{number}", oauth_token=token)

        return pull_fields(await self._send(tenant, owner, repo, read, write=False))

    async def get_pull_diff(self, owner: str, repo: str, number: int, *, tenant: str | None = None,
                            progress: ProgressSink = NO_PROGRESS) -> str:
        """The unified diff, streamed: one ``progress`` beat per body chunk received."""
        url = sansio.format_url(f"/repos/{owner}/{repo}/pulls/{number}", {}, base_url=self.base_url)

        def read(token: str | None) -> Awaitable[Any]:
            headers = sansio.create_headers(USER_AGENT, accept=DIFF_MEDIA_TYPE, oauth_token=token)
            return read_streamed(self._http, url, headers, progress, self.timeout_seconds)

        body = await self._send(tenant, owner, repo, read, write=False, progress=progress)
        return body if isinstance(body, str) else str(body)

    async def iter_comments(self, owner: str, repo: str, number: int, *, tenant: str | None = None,
                            progress: ProgressSink = NO_PROGRESS) -> AsyncIterator[dict[str, Any]]:
        url = f"/repos/{owner}/{repo}/issues/{number}/comments?per_page=100"
        async for item in self._iterate(tenant, owner, repo, url, progress):
            yield item

    async def post_comment(self, owner: str, repo: str, number: int, body: str, *, tenant: str | None = None,
                           progress: ProgressSink = NO_PROGRESS) -> dict[str, Any]:
        url = sansio.format_url(f"/repos/{owner}/{repo}/issues/{number}/comments", {}, base_url=self.base_url)
        content = json.dumps({"body": body}).encode()

        def post(token: str | None) -> Awaitable[Any]:
            headers = {**sansio.create_headers(USER_AGENT, accept=sansio.accept_format(), oauth_token=token),
                       "content-type": "application/json; charset=utf-8", "content-length": str(len(content))}
            return read_streamed(self._http, url, headers, progress, self.timeout_seconds, method="POST",
                                 content=content)

        return await self._send(tenant, owner, repo, post, write=True, progress=progress)

    async def get_issue(self, owner: str, repo: str, number: int, *, tenant: str | None = None) -> dict[str, Any]:
        """The issue's freshness fields (``forge_cache.ISSUE_FIELDS``; ``pull_request`` kept as a
        presence flag: GitHub's issues endpoint answers pull requests too), read conditionally like
        :meth:`get_pull` (its own URL, so an issue and a pull request of one number never share an entry)."""
        async def read(token: str | None) -> Any:
            with scoped(tenant):
                return await self._fresh.api().getitem(f"/repos/{owner}/{repo}/issues/{number}", oauth_token=token)

        return issue_fields(await self._send(tenant, owner, repo, read, write=False))

    async def read_issue(self, owner: str, repo: str, number: int, *, tenant: str | None = None) -> dict[str, Any]:
        """The whole issue (title, body, labels), read unconditionally (a tool's read, never cached)."""
        async def read(token: str | None) -> Any:
            return await self._gh.getitem(f"/repos/{owner}/{repo}/issues/{number}", oauth_token=token)

        issue = await self._send(tenant, owner, repo, read, write=False)
        return issue if isinstance(issue, dict) else {}

    async def issue_labels(self, owner: str, repo: str, number: int, *, tenant: str | None = None,
                           progress: ProgressSink = NO_PROGRESS) -> list[str]:
        """The names of the issue's labels now (every page)."""
        url = f"/repos/{owner}/{repo}/issues/{number}/labels?per_page=100"
        return [str(label.get("name")) async for label in self._iterate(tenant, owner, repo, url, progress)
                if isinstance(label, dict)]

    async def add_labels(self, owner: str, repo: str, number: int, labels: list[str], *, tenant: str | None = None,
                         progress: ProgressSink = NO_PROGRESS) -> list[str]:
        """``POST .../labels`` (adds; a set, so repeating it changes nothing); the label names after it."""
        async def post(token: str | None) -> Any:
            return await self._gh.post(f"/repos/{owner}/{repo}/issues/{number}/labels", data={"labels": labels},
                                       oauth_token=token)

        answer = await self._send(tenant, owner, repo, post, write=True, progress=progress)
        return [str(label.get("name")) for label in answer or [] if isinstance(label, dict)]

    async def list_open_pulls(self, owner: str, repo: str, *, tenant: str | None = None) -> list[dict[str, Any]]:
        """Every open pull request, least recently updated first, following the ``Link`` pages."""
        url = f"/repos/{owner}/{repo}/pulls?state=open&sort=updated&direction=asc&per_page=100"
        return [pull async for pull in self._iterate(tenant, owner, repo, url)]
