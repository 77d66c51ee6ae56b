"""JSON renderings of forge records in GitHub's REST shapes.

Only the fields a client plausibly reads are produced. ``url`` fields are
API URLs and ``html_url`` fields are web URLs, both rooted at the base URL
the request arrived on (the simulator serves no HTML, so ``html_url``
links are for display only). User and repository ids are stable CRC32s of
their names, so they are the same across runs and resets.
"""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from typing import Any

from simulators.forge._records import Comment, PullRequest, format_time

__all__ = ["comment_json", "entity_tag", "error_body", "etag_matches", "pull_json"]

DOCS = "https://docs.github.com/rest"


def _node_id(prefix: str, kind: str, ident: int) -> str:
    return prefix + base64.b64encode(f"sim:{kind}:{ident}".encode()).decode().rstrip("=")


def _user(login: str) -> dict[str, Any]:
    ident = zlib.crc32(login.encode())
    return {
        "login": login,
        "id": ident,
        "node_id": _node_id("U_", "user", ident),
        "type": "Bot" if login.endswith("[bot]") else "User",
    }


def _repo(base: str, owner: str, name: str) -> dict[str, Any]:
    full_name = f"{owner}/{name}"
    ident = zlib.crc32(full_name.lower().encode())
    return {
        "id": ident,
        "node_id": _node_id("R_", "repo", ident),
        "name": name,
        "full_name": full_name,
        "owner": _user(owner),
        "private": False,
        "html_url": f"{base}/{full_name}",
        "url": f"{base}/repos/{full_name}",
    }


def _time(value: Any) -> str | None:
    return format_time(value) if value is not None else None


def pull_json(pull: PullRequest, base: str) -> dict[str, Any]:
    full = f"{pull.owner}/{pull.repo}"
    api = f"{base}/repos/{full}"
    html = f"{base}/{full}/pull/{pull.number}"
    repo = _repo(base, pull.owner, pull.repo)
    return {
        "url": f"{api}/pulls/{pull.number}",
        "id": pull.id,
        "node_id": _node_id("PR_", "pull", pull.id),
        "html_url": html,
        "diff_url": f"{html}.diff",
        "patch_url": f"{html}.patch",
        "issue_url": f"{api}/issues/{pull.number}",
        "comments_url": f"{api}/issues/{pull.number}/comments",
        "number": pull.number,
        "state": pull.state,
        "locked": False,
        "title": pull.title,
        "user": _user(pull.user),
        "body": pull.body,
        "created_at": _time(pull.created_at),
        "updated_at": _time(pull.updated_at),
        "closed_at": _time(pull.closed_at),
        "merged_at": _time(pull.merged_at),
        "draft": False,
        "head": {
            "label": f"{pull.owner}:{pull.head_ref}",
            "ref": pull.head_ref,
            "sha": pull.head_sha,
            "user": _user(pull.owner),
            "repo": repo,
        },
        "base": {
            "label": f"{pull.owner}:{pull.base_ref}",
            "ref": pull.base_ref,
            "sha": pull.base_sha,
            "user": _user(pull.owner),
            "repo": repo,
        },
        "author_association": "MEMBER",
        "merged": pull.merged,
    }


def comment_json(comment: Comment, base: str) -> dict[str, Any]:
    full = f"{comment.owner}/{comment.repo}"
    return {
        "id": comment.id,
        "node_id": _node_id("IC_", "comment", comment.id),
        "url": f"{base}/repos/{full}/issues/comments/{comment.id}",
        "html_url": f"{base}/{full}/{'pull' if comment.on_pull else 'issues'}/{comment.number}"
                    f"#issuecomment-{comment.id}",
        "issue_url": f"{base}/repos/{full}/issues/{comment.number}",
        "body": comment.body,
        "user": _user(comment.user),
        "created_at": _time(comment.created_at),
        "updated_at": _time(comment.updated_at),
        "author_association": "NONE",
    }


def error_body(status: int, message: str, **extra: Any) -> dict[str, Any]:
    return {"message": message, **extra, "documentation_url": DOCS, "status": str(status)}


def entity_tag(body: Any) -> str:
    """A weak ETag for a JSON body, as GitHub sends: ``W/"<digest>"``, changing with any field."""
    digest = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return f'W/"{digest[:40]}"'


def etag_matches(if_none_match: str | None, etag: str) -> bool:
    """Does an ``If-None-Match`` header name ``etag`` (weak comparison, or ``*``)?"""
    if not if_none_match:
        return False
    bare = etag.removeprefix("W/")
    tags = [t.strip() for t in if_none_match.split(",")]
    return "*" in tags or any(t.removeprefix("W/") == bare for t in tags)
