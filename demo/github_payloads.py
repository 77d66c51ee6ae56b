"""Build GitHub ``pull_request`` deliveries the way GitHub sends them (shape, headers, signature)."""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from datetime import UTC, datetime
from typing import Any


def pull_request_payload(owner: str, repo: str, number: int, head_sha: str, action: str = "opened",
                         state: str = "open", draft: bool = False, updated_at: datetime | None = None
                         ) -> dict[str, Any]:
    """``updated_at`` (default now) is the event time intake checks against the source's max age."""
    full = f"{owner}/{repo}"
    updated = (updated_at or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "action": action,
        "number": number,
        "pull_request": {
            "url": f"https://api.github.com/repos/{full}/pulls/{number}",
            "id": 1000 + number, "node_id": f"PR_{number}", "number": number, "state": state,
            "locked": False, "title": f"Change #{number}", "user": {"login": "octocat", "id": 1},
            "body": "", "draft": draft, "merged": False,
            "created_at": "2026-11-29T10:00:00Z", "updated_at": updated,
            "head": {"label": f"{owner}:feature", "ref": "feature", "sha": head_sha,
                     "repo": {"full_name": full}},
            "base": {"label": f"{owner}:main", "ref": "main", "sha": "0" * 40, "repo": {"full_name": full}},
        },
        "repository": {"id": 42, "name": repo, "full_name": full, "private": False,
                       "owner": {"login": owner, "id": 7}},
        "sender": {"login": "octocat", "id": 1},
    }


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def delivery_headers(secret: str | None, body: bytes, event: str = "pull_request",
                     delivery_id: str | None = None) -> dict[str, str]:
    headers = {"content-type": "application/json", "x-github-event": event,
               "x-github-delivery": delivery_id or str(uuid.uuid4()), "user-agent": "GitHub-Hookshot/test"}
    if secret is not None:
        headers["x-hub-signature-256"] = sign(secret, body)
    return headers


def encode(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload).encode()


def issues_payload(owner: str, repo: str, number: int, updated_at: str, action: str = "opened", *,
                   title: str = "", body: str | None = "", state: str = "open",
                   labels: tuple[str, ...] = ()) -> dict[str, Any]:
    """An ``issues`` delivery as GitHub sends it; ``updated_at`` is the issue's, which triage takes as
    the input version (it must match the forge's for the delivery to be current)."""
    full = f"{owner}/{repo}"
    api = f"https://api.github.com/repos/{full}/issues/{number}"
    return {
        "action": action,
        "issue": {
            "url": api, "repository_url": f"https://api.github.com/repos/{full}",
            "labels_url": f"{api}/labels{{/name}}", "comments_url": f"{api}/comments",
            "html_url": f"https://github.com/{full}/issues/{number}",
            "id": 5000 + number, "node_id": f"I_{number}", "number": number, "title": title,
            "user": {"login": "octocat", "id": 1}, "labels": [{"name": name} for name in labels],
            "state": state, "locked": False, "assignee": None, "assignees": [], "milestone": None,
            "comments": 0, "created_at": updated_at, "updated_at": updated_at,
            "closed_at": updated_at if state == "closed" else None, "author_association": "OWNER", "body": body,
        },
        **({"changes": {"body": {"from": ""}}} if action == "edited" else {}),
        "repository": {"id": 43, "name": repo, "full_name": full, "private": False,
                       "owner": {"login": owner, "id": 7}},
        "sender": {"login": "octocat", "id": 1},
    }
