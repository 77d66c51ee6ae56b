"""The forge and model clients stop reusing a connection idle for 4 s, before a server's 5 s default
(uvicorn's ``timeout_keep_alive``, vLLM's API server) closes it as a request goes out
(``sluicegate/web/client_pools.py``). httpx's own expiry is 5 s: it would reuse it.

The server is a real HTTP/1.1 server on loopback (asyncio streams) that keeps every connection open
and counts them; the clients are the product's (``ForgeClient``, ``openai_client``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest

from activities.model_credentials import openai_client
from sluicegate.forge.client import ForgeClient
from sluicegate.web.client_pools import KEEPALIVE_EXPIRY_SECONDS

SERVER_IDLE_DEFAULT = 5.0
"""uvicorn's default ``timeout_keep_alive``."""
IDLE = (KEEPALIVE_EXPIRY_SECONDS + SERVER_IDLE_DEFAULT) / 2
PULL = {"number": 7, "state": "open", "draft": False, "merged": False, "updated_at": "2026-12-07T10:00:00Z",
        "title": "t", "head": {"sha": "c" * 40}}
COMPLETION = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
              "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
              "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


class CountingServer:
    """Answers every request with keep-alive and never closes a connection; counts connections."""

    def __init__(self) -> None:
        self.connections = 0
        self.requests = 0
        self._server: asyncio.Server | None = None

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
                length = next((int(v) for k, _, v in (line.partition(":") for line in head[1:])
                               if k.strip().lower() == "content-length"), 0)
                await reader.readexactly(length)
                self.requests += 1
                data = json.dumps(COMPLETION if "/chat/completions" in head[0] else PULL).encode()
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                             + f"content-length: {len(data)}\r\n\r\n".encode() + data)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            writer.close()


@pytest.fixture
async def server() -> AsyncIterator[CountingServer]:
    s = CountingServer()
    s.url = await s.start()  # type: ignore[attr-defined]
    try:
        yield s
    finally:
        await s.close()


async def _forge_twice(base_url: str, idle: float) -> None:
    forge = ForgeClient(base_url, token="t", timeout_seconds=10)
    try:
        await forge.get_pull("acme", "api", 7)
        await asyncio.sleep(idle)
        await forge.get_pull("acme", "api", 8)
    finally:
        await forge.aclose()


async def _model_twice(base_url: str, idle: float) -> None:
    client = openai_client(base_url + "/v1", "sk-test", 10.0)
    try:
        for n in range(2):
            await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
            if n == 0:
                await asyncio.sleep(idle)
    finally:
        await client.close()


@pytest.mark.parametrize("call", [_forge_twice, _model_twice], ids=["forge", "model"])
async def test_a_connection_idle_past_the_expiry_is_not_reused(server, call) -> None:
    assert KEEPALIVE_EXPIRY_SECONDS < SERVER_IDLE_DEFAULT
    await call(server.url, IDLE)
    assert server.requests == 2
    assert server.connections == 2  # a new connection, not the one a 5 s server is about to close


@pytest.mark.parametrize("call", [_forge_twice, _model_twice], ids=["forge", "model"])
async def test_a_briefly_idle_connection_is_reused(server, call) -> None:
    await call(server.url, 0.2)
    assert server.requests == 2 and server.connections == 1
