"""Slow and parallel bodies (finding 3): a CloudEvents source authenticates from its headers
before any body byte is read; every body read has a deadline (slow-loris) and the number of
bodies being read at once is capped. All of it unauthenticated: counters, no rows."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import pytest

import ledger
from demo.github_payloads import delivery_headers, encode, pull_request_payload
from tests.support.ledger_rows import grown, table_counts
from tests.webhook_api.server import running_api


@pytest.fixture
def api(sims, temporal_env, tmp_path):
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)

    def start(**env: str):
        return running_api(sims, temporal_env, url, **env)
    return start, url


def _open(server, path: str, headers: dict[str, str], first_bytes: bytes, source: str | None = None) -> socket.socket:
    """A request whose headers (and ``first_bytes`` of its body) are sent; the rest never is.
    ``source``: the client address to send from (any of 127.0.0.0/8 on loopback)."""
    parts = urlsplit(server.base_url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=30,
                                    source_address=(source, 0) if source else None)
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    sock.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\n{head}\r\n".encode("latin-1") + first_bytes)
    return sock


def _status(sock: socket.socket) -> int:
    """The status line of the answer (waits for it; the socket's timeout fails the test)."""
    data = b""
    while b"\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    sock.close()
    return int(data.split(b" ", 2)[1])


def _forged_github(length: int = 2000) -> dict[str, str]:
    body = encode(pull_request_payload("acme", "api", 42, "f" * 40))
    headers = delivery_headers("attacker-secret-guess-0001", body)
    return {**headers, "content-length": str(length)}


def test_a_cloudevents_source_refuses_a_bad_token_without_reading_the_body(api):
    start, url = api
    with start(SLUICEGATE__WEBHOOK_API__BODY_READ_TIMEOUT_SECONDS="60") as (server, _):
        before = table_counts(url)
        # The body is announced and never sent: only an answer from the headers alone comes back.
        sock = _open(server, "/webhooks/events", {"content-type": "application/cloudevents+json",
                                                  "authorization": "Bearer not-the-token-0000",
                                                  "content-length": "5000"}, b"{")
        sock.settimeout(20)
        assert _status(sock) == 401
        assert grown(before, table_counts(url)) == {}


@pytest.mark.parametrize("source", ["github", "stdhooks", "events"])
def test_a_body_that_never_arrives_is_cut_off_at_the_deadline(api, source):
    start, url = api
    with start(SLUICEGATE__WEBHOOK_API__BODY_READ_TIMEOUT_SECONDS="1") as (server, s):
        headers = _forged_github()
        if source == "events":  # a valid token: the body is read, then must arrive in time
            headers = {"content-type": "application/cloudevents+json", "content-length": "5000",
                       "authorization": f"Bearer {s.sources['events'].secret_values()[0]}"}
        before = table_counts(url)
        sock = _open(server, f"/webhooks/{source}", headers, b"{\"a")
        assert _status(sock) == 408
        assert grown(before, table_counts(url)) == {}


def test_bodies_read_at_once_are_capped_per_source(api):
    start, url = api
    with start(SLUICEGATE__WEBHOOK_API__BODY_READ_TIMEOUT_SECONDS="20",
               SLUICEGATE__WEBHOOK_API__MAX_CONCURRENT_BODY_READS="2") as (server, _):
        before = table_counts(url)
        slow = [_open(server, "/webhooks/github", _forged_github(), b"{") for _ in range(2)]
        statuses = []
        for _ in range(200):  # the slow two hold both read slots until their deadline
            probe = _open(server, "/webhooks/github", _forged_github(), b"")
            probe.sendall(b"x" * 2000)
            statuses.append(_status(probe))
            if statuses[-1] == 429:
                break
        assert statuses[-1] == 429, statuses
        assert set(statuses) <= {401, 429}
        # Another source keeps its own slots: its body is read (and, forged, refused 401), not 429.
        other = _open(server, "/webhooks/stdhooks", _forged_github(), b"")
        other.sendall(b"x" * 2000)
        assert _status(other) == 401
        for sock in slow:
            sock.close()
        assert grown(before, table_counts(url)) == {}


def test_a_flood_of_header_lines_is_refused_before_it_ends(api):
    """The request head is bounded before anything else (h11, ``webhook_api/_serving.py``): 4 MB of
    header lines get a 400 (or a reset) long before they are all read, and no row. (uvicorn's
    httptools protocol read all of it and waited for more.)"""
    start, url = api
    with start() as (server, _):
        before = table_counts(url)
        parts = urlsplit(server.base_url)
        sock = socket.create_connection((parts.hostname, parts.port), timeout=20)
        sock.sendall(b"POST /webhooks/github HTTP/1.1\r\nHost: x\r\n")  # a head that never ends
        sent = 0
        try:
            while sent < 4_000_000:
                sock.sendall(b"x-pad-%d: %s\r\n" % (sent, b"a" * 4000))
                sent += 4000
        except OSError:  # reset or broken pipe: the server gave up on the head
            pass
        try:
            status = _status(sock)
        except ConnectionResetError:
            status = None  # closed without an answer: refused all the same
        assert status in (400, 431, None) and status != 200
        assert grown(before, table_counts(url)) == {}


@pytest.mark.parametrize("path", ["/webhooks/github", "/console/sign-in"])
def test_a_client_that_goes_away_mid_body_is_a_counted_refusal_not_a_traceback(api, caplog, path):
    """Found by an adversarial review (session 17): Starlette's ``ClientDisconnect`` went uncaught,
    and uvicorn logged every such anonymous request as a traceback of some 65 lines, past the
    refusal log's rate limit. Now it is refused like a body that came too slowly: counted, one
    refusal line each, and no row."""
    import logging
    import time

    start, url = api
    with start() as (server, _):
        before = table_counts(url)
        caplog.set_level(logging.INFO)
        headers = _forged_github() if path.startswith("/webhooks") else {
            "content-type": "application/x-www-form-urlencoded", "content-length": "2000"}
        for _ in range(3):
            sock = _open(server, path, headers, b"token=abc")
            sock.close()  # the rest of the body never comes: the client is gone
        refused = []
        for _ in range(100):  # the server notices each disconnect on its own time
            refused = [r for r in caplog.records if "disconnected before its body was whole" in r.getMessage()]
            if len(refused) >= 3:
                break
            time.sleep(0.05)
        time.sleep(0.3)
        tracebacks = [r for r in caplog.records if r.exc_info or "Exception in ASGI application" in r.getMessage()]
        assert tracebacks == []
        assert len(refused) == 3
        assert grown(before, table_counts(url)) == {}


def test_one_client_address_cannot_take_every_read_slot_of_a_source(api):
    """Found by an adversarial review (session 17): 64 slow anonymous connections from one host
    held every read slot of the GitHub source, and a genuine signed delivery was refused 429 (GitHub
    does not retry it). One address now holds at most ``max_concurrent_body_reads_per_client``."""
    start, url = api
    with start(SLUICEGATE__WEBHOOK_API__BODY_READ_TIMEOUT_SECONDS="20",
               SLUICEGATE__WEBHOOK_API__MAX_CONCURRENT_BODY_READS="8",
               SLUICEGATE__WEBHOOK_API__MAX_CONCURRENT_BODY_READS_PER_CLIENT="2") as (server, _):
        before = table_counts(url)
        slow = [_open(server, "/webhooks/github", _forged_github(), b"{", source="127.0.0.9") for _ in range(2)]
        statuses = []
        for _ in range(200):  # the slow two hold what their address may hold, until their deadline
            probe = _open(server, "/webhooks/github", _forged_github(), b"", source="127.0.0.9")
            probe.sendall(b"x" * 2000)
            statuses.append(_status(probe))
            if statuses[-1] == 429:
                break
        assert statuses[-1] == 429, statuses
        other = _open(server, "/webhooks/github", _forged_github(), b"", source="127.0.0.10")
        other.sendall(b"x" * 2000)
        assert _status(other) == 401  # another address finds a slot: its body is read (and, forged, refused)
        for sock in slow:
            sock.close()
        assert grown(before, table_counts(url)) == {}
