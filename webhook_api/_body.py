"""Bounding a request before anything reads it: header count and size (body size: ``sluicegate.web.bounded_body``).

uvicorn (h11) already refuses a header block over 16 KiB; these bounds are ours, below it,
so what the parsers look at is small whatever server runs the app. A body over its cap is
refused as soon as the declared ``Content-Length`` or the streamed bytes pass it: it is never
buffered whole (a 60 MB body costs at most the cap in memory).
"""

from __future__ import annotations

import ipaddress
from contextlib import contextmanager
from typing import Iterator

from fastapi import Request

from sluicegate.web.bounded_body import BodyNotReceived, BodyTooSlow, declared_too_large, read_limited

__all__ = ["BodyNotReceived", "BodyReadGate", "BodyTooSlow", "bounded_headers", "declared_too_large", "read_limited"]

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


class BodyReadGate:
    """At most ``limit`` request bodies being read at once by this process, and at most
    ``per_client`` of them from one client address; the next one is refused at once (429) instead
    of queueing. With the read deadline this bounds what slow senders can hold: ``limit``
    connections for at most the deadline each — and one address (a slow-loris from one host) at
    most ``per_client`` of them, so it cannot take every slot of a source whose genuine sender
    (GitHub, which does not retry a refused delivery) then finds none. Many addresses at once can
    still; the answer to that is a reverse proxy that buffers whole bodies (docs/security.md)."""

    def __init__(self, limit: int, per_client: int | None = None) -> None:
        self._free = limit  # one event loop, no await between test and take: plain counters are enough
        self._per_client = per_client
        self._held: dict[str, int] = {}

    @contextmanager
    def slot(self, client: str = "-") -> Iterator[bool]:
        """Yields True with a slot held for the block, False when every slot (or every slot this
        ``client`` may hold) is taken. An IPv6 client counts by its /64: one host holds a whole /64."""
        client = _client_key(client)
        held = self._held.get(client, 0)
        if self._free <= 0 or (self._per_client is not None and held >= self._per_client):
            yield False
            return
        self._free -= 1
        self._held[client] = held + 1
        try:
            yield True
        finally:
            self._free += 1
            left = self._held[client] - 1
            if left:
                self._held[client] = left
            else:
                del self._held[client]


def _client_key(host: str) -> str:
    """The address the per-client cap counts: an IPv4 address as it is (an IPv4-mapped IPv6 one too),
    another IPv6 one by its /64 (loopback as it is)."""
    if ":" not in host:
        return host
    try:
        address = ipaddress.IPv6Address(host)
    except ValueError:
        return host
    if address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    if address.is_loopback:
        return str(address)
    return str(ipaddress.IPv6Network(f"{address}/64", strict=False))
