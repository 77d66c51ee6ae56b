"""Bounding a request before anything reads it: header count and size, body size while streaming.

uvicorn (h11) already refuses a header block over 16 KiB; these bounds are ours, below it,
so what the parsers look at is small whatever server runs the app. A body over its cap is
refused as soon as the declared ``Content-Length`` or the streamed bytes pass it: it is never
buffered whole (a 60 MB body costs at most the cap in memory).
"""

from __future__ import annotations

from fastapi import Request

MAX_HEADERS = 100
MAX_HEADER_NAME_BYTES = 256
MAX_HEADER_VALUE_BYTES = 8 * 1024


def bounded_headers(request: Request) -> dict[str, str] | None:
    """Headers with lower-case names, or ``None`` when there are too many or one is too long."""
    raw = request.headers.raw
    if len(raw) > MAX_HEADERS:
        return None
    headers: dict[str, str] = {}
    for name, value in raw:
        if len(name) > MAX_HEADER_NAME_BYTES or len(value) > MAX_HEADER_VALUE_BYTES:
            return None
        headers[name.decode("latin-1").lower()] = value.decode("latin-1")
    return headers


def declared_too_large(request: Request, limit: int) -> bool:
    """The request says up front (``Content-Length``) that its body is over ``limit``."""
    declared = request.headers.get("content-length")
    return declared is not None and declared.isdigit() and int(declared) > limit


async def read_limited(request: Request, limit: int) -> bytes | None:
    """The body, or ``None`` as soon as it is known to exceed ``limit`` bytes."""
    if declared_too_large(request, limit):
        return None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)
