"""Read an HTTP request body up to a limit, streaming: an oversize body is refused before it is held.

A declared ``Content-Length`` over the limit is refused without reading anything; a body that
grows past the limit while streaming (chunked, or a lying header) is refused as soon as it does.
Shared by the webhook API and the codec server.
"""

from __future__ import annotations

from starlette.requests import Request


def declared_too_large(request: Request, limit: int) -> bool:
    """The request says up front (``Content-Length``) that its body is over ``limit``."""
    declared = request.headers.get("content-length")
    return declared is not None and declared.isdigit() and int(declared) > limit


async def read_limited(request: Request, limit: int) -> bytes | None:
    """The body, or None when it is over ``limit`` bytes."""
    if declared_too_large(request, limit):
        return None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)
