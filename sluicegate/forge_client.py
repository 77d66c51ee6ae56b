"""Client for the forge (GitHub's REST API or the forge simulator), built on gidgethub.

Every failure surfaces as :class:`ForgeError` with a class the callers act on:
``retryable`` (5xx, rate limits, connection errors, timeouts — ``retry_after`` set when
the forge said so) or not (4xx: bad credentials, not found, validation). Timeouts on a
write are ambiguous — the forge may have committed — so callers that mutate must
reconcile before retrying (see ``activities.gateway``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, AsyncIterator

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


class ForgeClient:
    """Async client; one per process, closed with :meth:`aclose`."""

    def __init__(self, base_url: str, token: str | None, timeout_seconds: float = 10.0) -> None:
        self.base_url = base_url.rstrip("/")
        self._http = httpx2.AsyncClient(timeout=timeout_seconds)
        self._gh = GitHubAPI(self._http, USER_AGENT, oauth_token=token, base_url=base_url.rstrip("/"))

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _call(self, coro_factory, *, write: bool = False) -> Any:
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

    async def get_pull(self, owner: str, repo: str, number: int) -> dict[str, Any]:
        return await self._call(lambda: self._gh.getitem(f"/repos/{owner}/{repo}/pulls/{number}"))

    async def get_pull_diff(self, owner: str, repo: str, number: int) -> str:
        body = await self._call(
            lambda: self._gh.getitem(f"/repos/{owner}/{repo}/pulls/{number}", accept=DIFF_MEDIA_TYPE))
        return body if isinstance(body, str) else str(body)

    async def iter_comments(self, owner: str, repo: str, number: int) -> AsyncIterator[dict[str, Any]]:
        url = f"/repos/{owner}/{repo}/issues/{number}/comments?per_page=100"
        iterator = self._gh.getiter(url)
        while True:
            try:
                item = await self._call(lambda: iterator.__anext__())
            except StopAsyncIteration:
                return
            yield item

    async def post_comment(self, owner: str, repo: str, number: int, body: str) -> dict[str, Any]:
        return await self._call(
            lambda: self._gh.post(f"/repos/{owner}/{repo}/issues/{number}/comments", data={"body": body}),
            write=True)

    async def list_open_pulls(self, owner: str, repo: str) -> list[dict[str, Any]]:
        """Every open pull request, least recently updated first, following the ``Link`` pages."""
        url = f"/repos/{owner}/{repo}/pulls?state=open&sort=updated&direction=asc&per_page=100"
        iterator = self._gh.getiter(url)
        pulls: list[dict[str, Any]] = []
        while True:
            try:
                pulls.append(await self._call(lambda: iterator.__anext__()))
            except StopAsyncIteration:
                return pulls
