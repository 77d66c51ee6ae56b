"""Forge reads that report their progress: the diff streamed chunk by chunk, listings page by page.

The caller passes a :class:`ProgressSink` (the activities' ``Progress``: each beat is a Temporal
heartbeat carrying the details). One beat per body chunk received, one per page read; while a
request is sent and its answer has not begun, ``waiting`` beats on a timer for at most
``wait_seconds`` (the client's timeout). A body that stops arriving stops the beats.

Requests are built and answers read with gidgethub's ``sansio`` functions (the same headers,
URL handling, error exceptions and ``Link`` paging as ``GitHubAPI``), so ``call_forge`` maps
every failure exactly as it does for the other calls.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any, AsyncIterator, Protocol

import httpx2
from gidgethub import sansio

__all__ = ["NO_PROGRESS", "ProgressSink", "read_streamed", "read_pages"]


class ProgressSink(Protocol):
    def beat(self, **details: object) -> None:
        """Record (and report) progress."""

    def waiting(self, phase: str, limit_seconds: float) -> AbstractAsyncContextManager[None]:
        """Report liveness on a timer, for at most ``limit_seconds``, while an answer has not begun."""


class _NoProgress:
    def beat(self, **details: object) -> None:
        return None

    @asynccontextmanager
    async def waiting(self, phase: str, limit_seconds: float) -> AsyncIterator[None]:
        yield


NO_PROGRESS: ProgressSink = _NoProgress()


async def read_streamed(http: httpx2.AsyncClient, url: str, headers: dict[str, str], progress: ProgressSink,
                        wait_seconds: float, *, method: str = "GET", content: bytes | None = None) -> Any:
    """Send the request and return the answer's decoded body, beating once per body chunk received."""
    body = bytearray()
    async with AsyncExitStack() as stack:
        async with progress.waiting("awaiting-response", wait_seconds):
            response = await stack.enter_async_context(http.stream(method, url, headers=headers, content=content))
        chunks = 0
        progress.beat(phase="receiving", bytes=0, chunks=0)
        async for chunk in response.aiter_bytes():
            body += chunk
            chunks += 1
            progress.beat(phase="receiving", bytes=len(body), chunks=chunks)
    data, _, _ = sansio.decipher_response(response.status_code, response.headers, bytes(body))
    return data


async def read_pages(http: httpx2.AsyncClient, base_url: str, url: str, headers: dict[str, str],
                     progress: ProgressSink, wait_seconds: float, phase: str = "paging") -> AsyncIterator[Any]:
    """Every item of a paged listing (``Link: rel="next"``), beating once per page read."""
    current: str | None = url
    pages = items = 0
    while current:
        async with progress.waiting(f"awaiting-{phase}", wait_seconds):
            response = await http.get(sansio.format_url(current, {}, base_url=base_url), headers=headers)
        data, _, current = sansio.decipher_response(response.status_code, response.headers, response.content)
        if isinstance(data, dict) and "items" in data:
            data = data["items"]
        pages += 1
        items += len(data)
        progress.beat(phase=phase, pages=pages, items=items)
        for item in data:
            yield item
