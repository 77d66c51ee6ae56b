"""A small real HTTP/1.1 server on loopback (asyncio streams) for connection-level tests of our clients.

What a server does with a kept-alive connection (keep it, close it unanswered) is what those tests
are about, and no framework server lets a test decide that per request: a subclass's :meth:`handle`
reads requests with :func:`read_request` and answers with :func:`write_json`, or returns to close.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any


async def read_request(reader: asyncio.StreamReader) -> tuple[str, str]:
    """The next request's method and path; its body (``Content-Length``) is read and dropped."""
    lines = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    length = next((int(v) for k, _, v in (line.partition(":") for line in lines[1:])
                   if k.strip().lower() == "content-length"), 0)
    await reader.readexactly(length)
    return method, path


async def write_json(writer: asyncio.StreamWriter, status: int, body: Any) -> None:
    """One keep-alive JSON answer."""
    data = json.dumps(body).encode()
    writer.write(f"HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {len(data)}\r\n"
                 "connection: keep-alive\r\n\r\n".encode() + data)
    await writer.drain()


class LoopbackServer:
    """Counts connections; each is served by :meth:`handle` and closed when it returns."""

    def __init__(self) -> None:
        self.connections = 0
        self.url = ""
        self._server: asyncio.Server | None = None

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self.url

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await self.handle(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            writer.close()
