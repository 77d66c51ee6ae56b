"""Requests the attacks send: genuinely signed ones with hostile content, and forged ones."""

from __future__ import annotations

import json
import socket
import uuid
from datetime import UTC, datetime
from typing import Any

import httpx

from demo.github_payloads import delivery_headers, encode, pull_request_payload
from tests.security.target import Target
from tests.webhook_api.deliveries import ce_binary, ce_structured, cloud_event, pr_data, std_headers

STD_TYPE = "pull_request.synchronize"


def github(t: Target, pull, extra: dict[str, Any] | None = None, delivery_id: str | None = None,
           secret: str | None = None, action: str = "synchronize") -> tuple[dict[str, str], bytes]:
    body = encode(pull_request_payload(*pull, action=action) | (extra or {}))
    return delivery_headers(secret or t.settings.sources["github"].secret, body,
                            delivery_id=delivery_id or str(uuid.uuid4())), body


def stdhooks(t: Target, pull, top: dict[str, Any] | None = None, data: dict[str, Any] | None = None,
             delivery_id: str | None = None) -> tuple[dict[str, str], bytes]:
    doc = {"type": STD_TYPE, "timestamp": datetime.now(UTC).isoformat(), "data": pr_data(*pull) | (data or {}),
           **(top or {})}
    body = json.dumps(doc).encode()
    return std_headers(t.settings.sources["stdhooks"].secret, body, msg_id=delivery_id), body


def cloudevent(t: Target, pull, binary: bool = True, token: str | None = None, **attributes: Any):
    event = cloud_event(*pull, id=str(uuid.uuid4()), **attributes)
    headers, body = (ce_binary if binary else ce_structured)(event, token if token is not None else
                                                             t.settings.sources["events"].secret)
    if token == "":
        headers["authorization"] = "Bearer"  # an empty token (HTTP carries no trailing space)
    return headers, body


def post(t: Target, path: str, headers: dict[str, str], body: bytes | None = None, **kw) -> httpx.Response:
    return t.http.post(f"{t.api}{path}", content=body, headers=headers, **kw)


def manual(t: Target, token: str | None, body: dict[str, Any] | bytes) -> httpx.Response:
    headers = {"content-type": "application/json"} | ({"authorization": f"Bearer {token}"} if token else {})
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return post(t, "/v1/triggers/manual", headers, content)


def token(t: Target, actor: str) -> str:
    return t.settings.actors[actor].token.get_secret_value()


def raw(t: Target, head: str, first_bytes: bytes, timeout: float = 30) -> tuple[int, bytes]:
    """Send a request head and only the first bytes of its body on a raw socket, then read the
    answer: a server that answers now has not waited for (or read) the rest."""
    host, port = t.settings.webhook_api.host, t.settings.webhook_api.port
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(head.replace("\n", "\r\n").encode("latin-1") + b"\r\n" + first_bytes)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        head_part, _, body = data.partition(b"\r\n\r\n")
        length = next((int(line.split(b":")[1]) for line in head_part.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        while len(body) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
    return int(head_part.split(b" ", 2)[1]), body
