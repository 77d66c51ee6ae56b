"""The freshness reads' transport (aiohttp, ``sluicegate/forge/fresh_transport.py``) fails the way the
httpx2 calls do: a forge that does not answer is ``timed out``, a refused connection is ``connection
failed`` and not repeated, both retryable and never ambiguous (a read); a read after the client was
closed raises ``RuntimeError`` as httpx's closed client does; a malformed answer's error never carries the
token. Real loopback servers (asyncio streams); no proxy from the environment (``conftest.py``).
"""

from __future__ import annotations

import asyncio
import socket
import time

import pytest

from sluicegate.forge.client import ForgeClient
from sluicegate.forge.errors import ForgeError
from sluicegate.forge.fresh_transport import proxied
from tests.support.loopback_http import LoopbackServer, read_request, write_json


class SilentServer(LoopbackServer):
    """Reads each request and never answers (a forge stuck behind its load balancer)."""

    def __init__(self) -> None:
        super().__init__()
        self.requests = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        self.requests += 1
        await asyncio.sleep(30)


async def _failed_read(server: LoopbackServer, token: str = "t", timeout_seconds: float = 5) -> ForgeError:
    """``get_pull`` from ``server``, which must fail: its ``ForgeError`` (client and server closed after)."""
    forge = ForgeClient(await server.start(), token=token, timeout_seconds=timeout_seconds)
    try:
        with pytest.raises(ForgeError) as caught:
            await forge.get_pull("acme", "api", 7)
    finally:
        await forge.aclose()
        await server.close()
    return caught.value


async def test_a_forge_that_does_not_answer_times_out_within_the_client_timeout() -> None:
    server = SilentServer()
    started = time.monotonic()
    error = await _failed_read(server, timeout_seconds=0.5)
    took = time.monotonic() - started
    assert "timed out" in error.message and error.retryable and not error.ambiguous
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


class AnsweringServer(LoopbackServer):
    """Answers every request (301 to a pull request's read when ``moved``); records each request's
    target and ``Authorization`` header. As a proxy it sees absolute URLs."""

    def __init__(self, moved: bool = False) -> None:
        super().__init__()
        self.moved = moved
        self.seen: list[tuple[str, str | None]] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            auth = next((v.strip() for k, _, v in (h.partition(":") for h in head[1:])
                         if k.strip().lower() == "authorization"), None)
            self.seen.append((head[0].split(" ")[1], auth))
            if self.moved:
                writer.write(b"HTTP/1.1 301 Moved Permanently\r\nlocation: /repos/acme/renamed/pulls/7\r\n"
                             b"content-length: 0\r\n\r\n")
                await writer.drain()
                continue
            await write_json(writer, 200, PULL)


PULL = {"number": 7, "state": "open", "draft": False, "merged": False, "updated_at": "2026-12-07T10:00:00Z",
        "title": "t", "head": {"sha": "c" * 40}}


async def test_a_netrc_entry_for_the_forge_host_is_not_read(tmp_path, monkeypatch) -> None:
    """aiohttp's trust_env would refuse the token-bearing read ("Cannot combine AUTHORIZATION header
    with AUTH argument") or send the netrc password to a tokenless one; httpx2 never reads netrc."""
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login someone password secret\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    server = AnsweringServer()
    url = await server.start()
    for token in ("t", None):
        forge = ForgeClient(url, token=token, timeout_seconds=5)
        try:
            assert (await forge.get_pull("acme", "api", 7))["head"]["sha"] == "c" * 40
        finally:
            await forge.aclose()
    await server.close()
    assert [auth for _, auth in server.seen] == ["token t", None]


async def test_a_redirect_is_the_forge_s_answer_not_followed() -> None:
    server = AnsweringServer(moved=True)
    error = await _failed_read(server)
    assert error.status == 301 and not error.retryable
    assert [target for target, _ in server.seen] == ["/repos/acme/api/pulls/7"]


@pytest.mark.parametrize("variable", ["ALL_PROXY", "http_proxy", "HTTP_PROXY"])
async def test_a_proxy_in_the_environment_carries_the_freshness_reads(monkeypatch, variable) -> None:
    """aiohttp ignores ALL_PROXY (and https proxy URLs): under any proxy variable the reads go over
    httpx2, through the proxy, like every other forge call."""
    proxy = AnsweringServer()
    monkeypatch.setenv(variable, await proxy.start())
    forge = ForgeClient("http://forge.example.invalid", token="t", timeout_seconds=5)
    try:
        assert (await forge.get_pull("acme", "api", 7))["number"] == 7
    finally:
        await forge.aclose()
        await proxy.close()
    assert [target for target, _ in proxy.seen] == ["http://forge.example.invalid/repos/acme/api/pulls/7"]


@pytest.mark.parametrize("environ", [{"HTTPS_PROXY": "http://p:3128"}, {"https_proxy": "https://p:3128"},
                                     {"all_proxy": "socks5://p:1080"}])
def test_every_proxy_variable_sends_the_freshness_reads_over_httpx2(environ) -> None:
    assert proxied(environ) and not proxied({"NO_PROXY": "*", "HTTPS_PROXY": ""})


async def test_a_read_from_a_second_event_loop_is_refused() -> None:
    server = AnsweringServer()
    forge = ForgeClient(await server.start(), token="t", timeout_seconds=5)
    try:
        await forge.get_pull("acme", "api", 7)
        with pytest.raises(RuntimeError, match="event loop"):
            await asyncio.to_thread(asyncio.run, forge.get_pull("acme", "api", 8))
    finally:
        await forge.aclose()
        await server.close()


class GarbageServer(LoopbackServer):
    """Answers every request with bytes that are not HTTP (a middlebox mangling the answer)."""

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"NOT HTTP AT ALL\r\n\r\n")
        await writer.drain()


async def test_a_malformed_answer_s_error_does_not_carry_the_token() -> None:
    """aiohttp's ClientResponseError repr holds the request's headers; the ForgeError's message (kept in
    the receipt, returned to the webhook's sender) must not."""
    error = await _failed_read(GarbageServer(), token="tok-SECRET-123")
    assert "connection failed: ClientResponseError" in error.message
    assert "SECRET" not in error.message and "authorization" not in error.message.lower()
