"""A kept-alive connection the forge closed as a request went out: reads are repeated once, writes never.

The server here is a real HTTP/1.1 server on loopback (asyncio streams) that answers the first
request of every connection with keep-alive and closes the connection, unanswered, on the second:
what a server whose idle timeout fires as the client reuses the connection does (uvicorn's
``timeout_keep_alive``, a load balancer's idle timeout). The last CI failure of the quick bench pass
was this race: a freshness read failed, and the delivery was deferred ``source-unavailable``.

The freshness reads (``get_pull``) and the other calls go over two transports
(``sluicegate/forge/fresh_transport.py``), each with its own connections: a test of the httpx2 calls
first makes one of them keep a connection (a diff read).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator

import pytest

from sluicegate.forge.client import ForgeClient
from sluicegate.forge.errors import ForgeError
from tests.support.loopback_http import LoopbackServer, read_request, write_json

SHA = "c" * 40
PULL = {"number": 7, "state": "open", "draft": False, "merged": False, "updated_at": "2026-12-07T10:00:00Z",
        "title": "t", "head": {"sha": SHA}, "body": "dropped by pull_fields"}


class DroppingServer(LoopbackServer):
    """Answers the first request on each connection; closes the connection on the second, unanswered."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: Counter[str] = Counter()  # "METHOD path" of every request head read
        self.answered: Counter[str] = Counter()
        self.drop_every_request = False

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for nth in (1, 2):
            method, path = await read_request(reader)
            self.requests[f"{method} {path}"] += 1
            if nth == 2 or self.drop_every_request:
                return  # the idle timeout fired: close without an answer
            await write_json(writer, *((201, {"id": 1, "body": "x"}) if method == "POST" else (200, PULL)))
            self.answered[f"{method} {path}"] += 1


@pytest.fixture
async def dropping() -> AsyncIterator[tuple[DroppingServer, ForgeClient]]:
    server = DroppingServer()
    forge = ForgeClient(await server.start(), token="t", timeout_seconds=5)
    try:
        yield server, forge
    finally:
        await forge.aclose()
        await server.close()


async def test_a_read_on_a_dropped_connection_is_repeated_on_a_new_one(dropping) -> None:
    server, forge = dropping
    first = await forge.get_pull("acme", "api", 7)
    second = await forge.get_pull("acme", "api", 7)  # sent on the kept connection, which the server closes
    assert first == second == {k: v for k, v in PULL.items() if k != "body"}
    assert server.requests["GET /repos/acme/api/pulls/7"] == 3  # answered, dropped, repeated
    assert server.answered["GET /repos/acme/api/pulls/7"] == 2
    assert server.connections == 2


async def test_a_diff_read_is_repeated_too(dropping) -> None:
    server, forge = dropping
    await forge.get_pull_diff("acme", "api", 7)
    await forge.get_pull_diff("acme", "api", 7)  # on the kept connection, which the server closes
    assert server.requests["GET /repos/acme/api/pulls/7"] == 3
    assert server.answered["GET /repos/acme/api/pulls/7"] == 2 and server.connections == 2


async def test_a_write_on_a_dropped_connection_is_never_repeated(dropping) -> None:
    server, forge = dropping
    await forge.get_pull_diff("acme", "api", 7)  # the writes' transport keeps this connection
    with pytest.raises(ForgeError) as caught:
        await forge.post_comment("acme", "api", 7, "hello")
    assert caught.value.retryable and caught.value.ambiguous  # the caller reconciles before any repeat
    assert server.requests["POST /repos/acme/api/issues/7/comments"] == 1
    assert server.connections == 1


async def test_a_read_is_repeated_once_only(dropping) -> None:
    server, forge = dropping
    server.drop_every_request = True
    with pytest.raises(ForgeError) as caught:
        await forge.get_pull("acme", "api", 9)
    assert caught.value.retryable and not caught.value.ambiguous
    assert server.requests["GET /repos/acme/api/pulls/9"] == 2 and server.answered.total() == 0


async def test_a_client_closed_before_the_repeat_answers_with_the_drop() -> None:
    """Shutdown closes the client while a read waits; the read's drop is the answer (a ForgeError), not
    httpx's "client has been closed" from the repeat."""
    closing = asyncio.Event()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        await closing.wait()
        writer.close()  # dropped unanswered, after the client was closed

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    forge = ForgeClient(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", token="t", timeout_seconds=5)
    try:
        read = asyncio.create_task(forge.get_pull("acme", "api", 7))
        await asyncio.sleep(0.2)
        await forge.aclose()
        closing.set()
        with pytest.raises(ForgeError) as caught:
            await read
        assert caught.value.retryable and "connection failed" in caught.value.message
    finally:
        server.close()
        await server.wait_closed()
