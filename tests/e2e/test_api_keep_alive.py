"""The webhook API process keeps an idle connection open for ``webhook_api.keep_alive_seconds``.

uvicorn's own default is 5 s, the same as the idle expiry of httpx's pool (and shorter than a load
balancer's): a sender reusing a connection as the API closes it loses that request in flight. The
quick bench pass failed in CI that way (``intake error ReadError``). Real parts: ``python -m
webhook_api`` as the dev stack starts it, configured through the environment; a raw socket.
"""

from __future__ import annotations

import socket
import time

import pytest

pytestmark = pytest.mark.e2e

HEALTH = b"GET /healthz HTTP/1.1\r\nHost: api\r\n\r\n"
IDLE = 7.0
"""Longer than uvicorn's default keep-alive (5 s): with it, the server would have closed the connection."""


def _answer(sock: socket.socket) -> bytes:
    """One whole response (the health answer is small: head and body arrive within the read)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")[1:]
                  if line.lower().startswith(b"content-length:"))
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def test_an_idle_connection_outlives_uvicorns_default_keep_alive(stack_factory):
    stack = stack_factory(SLUICEGATE__WEBHOOK_API__KEEP_ALIVE_SECONDS="40")
    api = stack.settings.webhook_api
    with socket.create_connection((api.host, api.port), timeout=20) as sock:
        sock.sendall(HEALTH)
        assert _answer(sock).startswith(b"HTTP/1.1 200")
        time.sleep(IDLE)
        sock.sendall(HEALTH)  # the same connection, idle past 5 s
        assert _answer(sock).startswith(b"HTTP/1.1 200")
