"""Bounding a request before anything reads it: header count and size (body size: ``sluicegate.bounded_body``).

uvicorn (h11) already refuses a header block over 16 KiB; these bounds are ours, below it,
so what the parsers look at is small whatever server runs the app. A body over its cap is
refused as soon as the declared ``Content-Length`` or the streamed bytes pass it: it is never
buffered whole (a 60 MB body costs at most the cap in memory).
"""

from __future__ import annotations

from fastapi import Request

from sluicegate.bounded_body import declared_too_large, read_limited

__all__ = ["bounded_headers", "declared_too_large", "read_limited"]

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
