"""The forge and model clients stop reusing a connection idle for 4 s, before a server's 5 s default
(uvicorn's ``timeout_keep_alive``, vLLM's API server) closes it as a request goes out
(``sluicegate/web/client_pools.py``). httpx's own expiry is 5 s: it would reuse it.

The server is a real HTTP/1.1 server on loopback (asyncio streams) that keeps every connection open
and counts them; the clients are the product's (``ForgeClient``, ``openai_client``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from functools import partial

import pytest

from activities.model_credentials import openai_client
from sluicegate.forge.client import ForgeClient
from sluicegate.web.client_pools import KEEPALIVE_EXPIRY_SECONDS
from tests.support.loopback_http import LoopbackServer, read_request, write_json

SERVER_IDLE_DEFAULT = 5.0
"""uvicorn's default ``timeout_keep_alive``."""
IDLE = (KEEPALIVE_EXPIRY_SECONDS + SERVER_IDLE_DEFAULT) / 2
PULL = {"number": 7, "state": "open", "draft": False, "merged": False, "updated_at": "2026-12-07T10:00:00Z",
        "title": "t", "head": {"sha": "c" * 40}}
COMPLETION = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
              "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
              "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


class CountingServer(LoopbackServer):
    """Answers every request with keep-alive and never closes a connection."""

    def __init__(self) -> None:
        super().__init__()
        self.requests = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            _, path = await read_request(reader)
            self.requests += 1
            await write_json(writer, 200, COMPLETION if path.endswith("/chat/completions") else PULL)


@pytest.fixture
async def server() -> AsyncIterator[CountingServer]:
    s = CountingServer()
    await s.start()
    try:
        yield s
    finally:
        await s.close()


async def _forge_twice(base_url: str, idle: float, read: str = "get_pull") -> None:
    """Two reads ``idle`` seconds apart: ``get_pull`` (the freshness reads' aiohttp pool) or
    ``get_pull_diff`` (the httpx2 pool of the forge client's other calls: diff, listings, writes)."""
    forge = ForgeClient(base_url, token="t", timeout_seconds=10)
    try:
        await getattr(forge, read)("acme", "api", 7)
        await asyncio.sleep(idle)
        await getattr(forge, read)("acme", "api", 8)
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


CALLS = [_forge_twice, partial(_forge_twice, read="get_pull_diff"), _model_twice]
CALL_IDS = ["forge", "forge-diff", "model"]


@pytest.mark.parametrize("call", CALLS, ids=CALL_IDS)
async def test_a_connection_idle_past_the_expiry_is_not_reused(server, call) -> None:
    assert KEEPALIVE_EXPIRY_SECONDS < SERVER_IDLE_DEFAULT
    await call(server.url, IDLE)
    assert server.requests == 2
    assert server.connections == 2  # a new connection, not the one a 5 s server is about to close


@pytest.mark.parametrize("call", CALLS, ids=CALL_IDS)
async def test_a_briefly_idle_connection_is_reused(server, call) -> None:
    await call(server.url, 0.2)
    assert server.requests == 2 and server.connections == 1
