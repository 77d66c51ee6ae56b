"""Build Standard Webhooks and CloudEvents deliveries the way their senders do (with each
spec's own library), for the ``stdhooks`` and ``events`` sources of temporal-dev.yaml."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

from cloudevents.core.bindings.http import to_binary, to_structured
from cloudevents.core.formats.json import JSONFormat
from cloudevents.core.v1.event import CloudEvent
from standardwebhooks import Webhook

STD_TYPE = "pull_request.synchronize"
CE_TYPE = "dev.sluicegate.pull_request.synchronize"


def pr_data(owner: str, repo: str, number: int, head_sha: str) -> dict[str, Any]:
    """The ``data`` both generic dev sources map: repository owner/name, number, head_sha."""
    return {"repository": {"owner": owner, "name": repo}, "number": number, "head_sha": head_sha}


def std_body(owner: str, repo: str, number: int, head_sha: str, type: str = STD_TYPE,
             timestamp: datetime | None = None) -> bytes:
    """A Standard Webhooks payload: ``{"type", "timestamp", "data"}``."""
    when = (timestamp or datetime.now(UTC)).isoformat()
    return json.dumps({"type": type, "timestamp": when, "data": pr_data(owner, repo, number, head_sha)}).encode()


def std_headers(secret: str, body: bytes, msg_id: str | None = None, at: datetime | None = None) -> dict[str, str]:
    """Headers signed with ``secret`` (``whsec_...``) at ``at`` (default now)."""
    msg_id = msg_id or f"msg_{uuid.uuid4().hex}"
    at = at or datetime.now(UTC)
    return {"content-type": "application/json", "webhook-id": msg_id,
            "webhook-timestamp": str(int(at.timestamp())),
            "webhook-signature": Webhook(secret).sign(msg_id, at, body.decode("utf-8", "replace"))}


def cloud_event(owner: str, repo: str, number: int, head_sha: str, type: str = CE_TYPE, id: str | None = None,
                time: datetime | None = None, **extra: Any) -> CloudEvent:
    attributes = {"id": id or str(uuid.uuid4()), "source": "//forge.example/acme", "type": type,
                  "specversion": "1.0", "time": time or datetime.now(UTC),
                  "datacontenttype": "application/json", **extra}
    return CloudEvent(attributes, pr_data(owner, repo, number, head_sha))


def ce_structured(event: CloudEvent, token: str | None) -> tuple[dict[str, str], bytes]:
    message = to_structured(event, JSONFormat())
    return _with_token(message.headers, token), message.body


def ce_binary(event: CloudEvent, token: str | None) -> tuple[dict[str, str], bytes]:
    message = to_binary(event, JSONFormat())
    return _with_token(message.headers, token), message.body


def _with_token(headers: dict[str, str], token: str | None) -> dict[str, str]:
    headers = {k.lower(): v for k, v in headers.items()}
    return headers | ({"authorization": f"Bearer {token}"} if token is not None else {})
