"""The freshness reads' transport (aiohttp, ``sluicegate/forge/fresh_transport.py``) fails the way the
httpx2 calls do: a forge that does not answer is ``timed out``, a refused connection is ``connection
failed`` and not repeated, both retryable and never ambiguous (a read); a read after the client was
closed raises ``RuntimeError`` as httpx's closed client does. Real loopback servers (asyncio streams).
"""

from __future__ import annotations

import asyncio
import socket
import time

import pytest

from sluicegate.forge.client import ForgeClient
from sluicegate.forge.errors import ForgeError
from tests.support.loopback_http import LoopbackServer, read_request


class SilentServer(LoopbackServer):
    """Reads each request and never answers (a forge stuck behind its load balancer)."""

    def __init__(self) -> None:
        super().__init__()
        self.requests = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        self.requests += 1
        await asyncio.sleep(30)


async def test_a_forge_that_does_not_answer_times_out_within_the_client_timeout() -> None:
    server = SilentServer()
    forge = ForgeClient(await server.start(), token="t", timeout_seconds=0.5)
    try:
        started = time.monotonic()
        with pytest.raises(ForgeError) as caught:
            await forge.get_pull("acme", "api", 7)
        took = time.monotonic() - started
    finally:
        await forge.aclose()
        await server.close()
    assert "timed out" in caught.value.message and caught.value.retryable and not caught.value.ambiguous
    assert 0.4 < took < 5.0
    assert server.requests == 1  # a timeout is not a drop: the caller's backoff answers it


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once the socket is closed


async def test_a_refused_connection_is_connection_failed_and_retryable() -> None:
    forge = ForgeClient(f"http://127.0.0.1:{_closed_port()}", token="t", timeout_seconds=5)
    try:
        with pytest.raises(ForgeError) as caught:
            await forge.get_issue("acme", "api", 7)
    finally:
        await forge.aclose()
    assert "connection failed" in caught.value.message and "ClientConnectorError" in caught.value.message
    assert caught.value.retryable and not caught.value.ambiguous


async def test_a_read_after_the_client_was_closed_raises_like_httpx() -> None:
    forge = ForgeClient("http://127.0.0.1:1", token="t")
    await forge.aclose()
    with pytest.raises(RuntimeError, match="closed"):
        await forge.get_pull("acme", "api", 7)
