"""Client for the forge (GitHub's REST API or the forge simulator), built on gidgethub.

Every failure surfaces as :class:`ForgeError` with a class the callers act on:
``retryable`` (5xx, rate limits, connection errors, timeouts — ``retry_after`` set when
the forge said so) or not (4xx: bad credentials, not found, validation). Timeouts on a
write are ambiguous — the forge may have committed — so callers that mutate must
reconcile before retrying (see ``activities.gateway``).

Credentials come per call from a :class:`ForgeCredentials` (the tenant and repository of the
call pick the token): :class:`StaticToken` sends one configured token everywhere;
``sluicegate.forge_auth.InstallationTokens`` mints GitHub App installation tokens scoped to
the call's repository. A 401 answered to a token the credentials can renew (an installation
token revoked or expired early) drops that token and repeats the request once with a fresh
one: a refused request was not applied, so repeating a write is safe. A 401 after a listing
has already yielded items is raised as retryable instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, AsyncIterator, Awaitable, Callable, Protocol

import gidgethub
import httpx2
from gidgethub.httpx import GitHubAPI

DIFF_MEDIA_TYPE = "application/vnd.github.diff"
USER_AGENT = "sluicegate"


@dataclass
class ForgeError(Exception):
    """A forge request failed; ``retryable`` tells whether trying again can help."""

    message: str
    status: int | None
    retryable: bool
    retry_after: float | None = None
    ambiguous: bool = False
    """True when the request may have been applied (timeout or dropped connection)."""

    def __str__(self) -> str:
        return f"forge error ({self.status or 'no status'}): {self.message}"


def _retry_after(headers: Any) -> float | None:
    try:
        value = headers.get("retry-after") if headers is not None else None
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


async def call_forge(coro_factory: Callable[[], Awaitable[Any]], *, write: bool = False) -> Any:
    """Await one gidgethub request, turning every failure into a classified :class:`ForgeError`."""
    try:
        return await coro_factory()
    except gidgethub.RateLimitExceeded as exc:
        reset = exc.rate_limit.reset_datetime if exc.rate_limit else None
        wait = (reset - datetime.now(UTC)).total_seconds() if reset else None
        raise ForgeError(str(exc), int(exc.status_code), True,
                         _retry_after(exc.headers) or (max(wait, 1.0) if wait is not None else None)) from None
    except gidgethub.BadRequest as exc:
        status = int(exc.status_code)
        retry = status == 429
        raise ForgeError(str(exc) or exc.status_code.phrase, status, retry, _retry_after(exc.headers)) from None
    except gidgethub.GitHubBroken as exc:
        raise ForgeError(str(exc) or "forge server error", int(exc.status_code), True,
                         _retry_after(exc.headers), ambiguous=write) from None
    except gidgethub.HTTPException as exc:
        raise ForgeError(str(exc), int(exc.status_code), False) from None
    except httpx2.TimeoutException as exc:
        raise ForgeError(f"timed out: {exc!r}", None, True, None, ambiguous=write) from None
    except httpx2.TransportError as exc:
        raise ForgeError(f"connection failed: {exc!r}", None, True, None, ambiguous=write) from None


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
        self._http = httpx2.AsyncClient(timeout=timeout_seconds)
        self._gh = GitHubAPI(self._http, USER_AGENT, base_url=self.base_url)
        self._credentials: ForgeCredentials = credentials if credentials is not None else StaticToken(token)

    async def aclose(self) -> None:
        try:
            await self._http.aclose()
        finally:
            await self._credentials.aclose()

    async def _send(self, tenant: str | None, owner: str, repo: str, request: Callable[[str | None], Awaitable[Any]],
                    *, write: bool = False) -> Any:
        """``request(token)``; once more with a fresh token if the forge refused a renewable one."""
        tenant = tenant or None
        token = await self._credentials.token_for(tenant, owner, repo)
        try:
            return await call_forge(lambda: request(token), write=write)
        except ForgeError as exc:
            if exc.status != 401 or token is None or not self._credentials.discard(tenant, owner, repo, token):
                raise
        token = await self._credentials.token_for(tenant, owner, repo)
        return await call_forge(lambda: request(token), write=write)

    async def _iterate(self, tenant: str | None, owner: str, repo: str, url: str) -> AsyncIterator[Any]:
        """Every item of a paged listing; a refused token is renewed only before the first item."""
        tenant = tenant or None
        token = await self._credentials.token_for(tenant, owner, repo)
        iterator = self._gh.getiter(url, oauth_token=token)
        may_renew = True
        while True:
            try:
                item = await call_forge(lambda: iterator.__anext__())
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
                iterator = self._gh.getiter(url, oauth_token=token)
                continue
            may_renew = False
            yield item

    async def get_pull(self, owner: str, repo: str, number: int, *, tenant: str | None = None) -> dict[str, Any]:
        return await self._send(tenant, owner, repo, lambda token: self._gh.getitem(
            f"/repos/{owner}/{repo}/pulls/{number}", oauth_token=token))

    async def get_pull_diff(self, owner: str, repo: str, number: int, *, tenant: str | None = None) -> str:
        body = await self._send(tenant, owner, repo, lambda token: self._gh.getitem(
            f"/repos/{owner}/{repo}/pulls/{number}", accept=DIFF_MEDIA_TYPE, oauth_token=token))
        return body if isinstance(body, str) else str(body)

    async def iter_comments(self, owner: str, repo: str, number: int, *,
                            tenant: str | None = None) -> AsyncIterator[dict[str, Any]]:
        url = f"/repos/{owner}/{repo}/issues/{number}/comments?per_page=100"
        async for item in self._iterate(tenant, owner, repo, url):
            yield item

    async def post_comment(self, owner: str, repo: str, number: int, body: str, *,
                           tenant: str | None = None) -> dict[str, Any]:
        return await self._send(tenant, owner, repo, lambda token: self._gh.post(
            f"/repos/{owner}/{repo}/issues/{number}/comments", data={"body": body}, oauth_token=token), write=True)

    async def list_open_pulls(self, owner: str, repo: str, *, tenant: str | None = None) -> list[dict[str, Any]]:
        """Every open pull request, least recently updated first, following the ``Link`` pages."""
        url = f"/repos/{owner}/{repo}/pulls?state=open&sort=updated&direction=asc&per_page=100"
        return [pull async for pull in self._iterate(tenant, owner, repo, url)]
