"""Issues of the forge simulator: records, labels, fixture loading and GitHub's JSON shapes.

An issue here is a *plain* issue; a pull request is also an issue on GitHub (same number space),
so ``GET /repos/{o}/{r}/issues/{n}`` answers a pull too, rendered from the pull with a
``pull_request`` object (``IssueView.pull``). The state (``_state``) refuses a plain issue and a
pull sharing a number.

Labels belong to a repository: each repository starts with GitHub's default labels (``bug``,
``documentation``, ``enhancement``, ``question``, ...); adding an unknown name to an issue creates
it (colour ``ededed``), as ``POST .../issues/{n}/labels`` does on GitHub. Names match
case-insensitively and keep the repository's spelling. Label ids are CRC32s of
``owner/repo:name`` (lower-cased), so they are stable across runs and resets.

Fixtures: ``"issues": [{"number", "title", "body"?, "state"?, "user"?, "labels"?, "created_at"?,
"updated_at"?}]`` in ``simulators/fixtures/forge/<owner>__<repo>.json``; a malformed entry makes
the whole load fail (``FixtureError``, raised by the caller).
"""

from __future__ import annotations

import base64
import json
import zlib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from simulators.forge._records import PullRequest, check_state, format_time, parse_time

__all__ = [
    "DEFAULT_LABELS",
    "MAX_LABELS_PER_ISSUE",
    "Issue",
    "IssueView",
    "Label",
    "check_label_names",
    "issue_from_fixture",
    "issue_json",
    "label_json",
    "load_issues",
]

MAX_LABELS_PER_ISSUE = 100
"""GitHub refuses more labels than this on one issue (422)."""
MAX_LABEL_NAME = 50
NEW_LABEL_COLOR = "ededed"


@dataclass(frozen=True)
class Label:
    name: str
    color: str = NEW_LABEL_COLOR
    description: str | None = None
    default: bool = False


DEFAULT_LABELS: tuple[Label, ...] = (
    Label("bug", "d73a4a", "Something isn't working", True),
    Label("documentation", "0075ca", "Improvements or additions to documentation", True),
    Label("duplicate", "cfd3d7", "This issue or pull request already exists", True),
    Label("enhancement", "a2eeef", "New feature or request", True),
    Label("good first issue", "7057ff", "Good for newcomers", True),
    Label("help wanted", "008672", "Extra attention is needed", True),
    Label("invalid", "e4e669", "This doesn't seem right", True),
    Label("question", "d876e3", "Further information is requested", True),
    Label("wontfix", "ffffff", "This will not be worked on", True),
)
"""The labels GitHub gives every new repository."""


@dataclass
class Issue:
    owner: str
    repo: str
    number: int
    title: str
    body: str | None
    state: str
    user: str
    labels: tuple[str, ...]  # the repository's spelling, sorted case-insensitively
    created_at: datetime
    updated_at: datetime
    closed_at: datetime | None = None
    state_reason: str | None = None


@dataclass(frozen=True)
class IssueView:
    """What ``GET .../issues/{n}`` renders: a plain issue, or a pull seen as an issue."""

    owner: str
    repo: str
    number: int
    title: str
    body: str | None
    state: str
    user: str
    labels: tuple[Label, ...]
    comments: int
    created_at: datetime
    updated_at: datetime
    closed_at: datetime | None
    state_reason: str | None
    pull: PullRequest | None = None


def check_label_names(value: Any) -> list[str]:
    """Label names from a request (``["a", ...]``, or ``[{"name": "a"}, ...]`` as GitHub also takes);
    ``ValueError`` naming the problem (blank, too long, not strings, not a list)."""
    if not isinstance(value, list):
        raise ValueError("labels must be a list of label names")
    names: list[str] = []
    for item in value:
        name = item.get("name") if isinstance(item, dict) else item
        if not isinstance(name, str) or not name.strip():
            raise ValueError("every label must be a non-empty string")
        if len(name.strip()) > MAX_LABEL_NAME:
            raise ValueError(f"label names are at most {MAX_LABEL_NAME} characters")
        names.append(name.strip())
    return names


def issue_from_fixture(raw: Any, owner: str, repo: str, now: datetime) -> tuple[Issue, list[str]]:
    """One fixture entry -> (issue without labels, its label names); ``ValueError`` if malformed."""
    if not isinstance(raw, dict):
        raise ValueError("an issue must be a JSON object")
    unknown = set(raw) - {"number", "title", "body", "state", "user", "labels", "created_at", "updated_at"}
    if unknown:
        raise ValueError(f"issue has unknown fields {sorted(unknown)}")
    number = raw.get("number")
    if isinstance(number, bool) or not isinstance(number, int) or number < 1:
        raise ValueError("issue number must be a positive integer")
    if not isinstance(raw.get("title"), str) or not raw["title"].strip():
        raise ValueError(f"issue {number}: title must be a non-empty string")
    body = raw.get("body")
    if body is not None and not isinstance(body, str):
        raise ValueError(f"issue {number}: body must be a string or null")
    state = check_state(raw.get("state", "open"))
    created = parse_time(raw["created_at"]) if raw.get("created_at") else now
    updated = parse_time(raw["updated_at"]) if raw.get("updated_at") else created
    issue = Issue(owner=owner, repo=repo, number=number, title=raw["title"], body=body, state=state,
                  user=str(raw.get("user", "octocat")), labels=(), created_at=created, updated_at=updated,
                  closed_at=updated if state == "closed" else None,
                  state_reason="completed" if state == "closed" else None)
    return issue, check_label_names(raw.get("labels", []))


def load_issues(directory: Path, now: datetime) -> list[tuple[Issue, list[str]]]:
    """Every fixture's ``issues`` (files in name order); ``ValueError``/``OSError`` name the file."""
    found: list[tuple[Issue, list[str]]] = []
    for path in sorted(directory.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            owner, repo = str(data["owner"]), str(data["repo"])
            raw_issues = data.get("issues", [])
            if not isinstance(raw_issues, list):
                raise ValueError("issues must be a list")
            seen: set[int] = set()
            for raw in raw_issues:
                issue, labels = issue_from_fixture(raw, owner, repo, now)
                if issue.number in seen:
                    raise ValueError(f"duplicate issue number {issue.number}")
                seen.add(issue.number)
                found.append((issue, labels))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{path.name}: {exc!r}") from exc
    return found


def _ident(kind: str, text: str) -> int:
    return zlib.crc32(f"{kind}:{text.lower()}".encode())


def _node_id(prefix: str, kind: str, ident: int) -> str:
    return prefix + base64.b64encode(f"sim:{kind}:{ident}".encode()).decode().rstrip("=")


def _time(value: datetime | None) -> str | None:
    return format_time(value) if value is not None else None


def _user(login: str) -> dict[str, Any]:
    ident = zlib.crc32(login.encode())  # the same id as _render's users
    return {"login": login, "id": ident, "node_id": _node_id("U_", "user", ident),
            "type": "Bot" if login.endswith("[bot]") else "User"}


def label_json(label: Label, owner: str, repo: str, base: str) -> dict[str, Any]:
    ident = _ident("label", f"{owner}/{repo}:{label.name}")
    return {
        "id": ident,
        "node_id": _node_id("LA_", "label", ident),
        "url": f"{base}/repos/{owner}/{repo}/labels/{quote(label.name, safe='')}",
        "name": label.name,
        "color": label.color,
        "default": label.default,
        "description": label.description,
    }


def issue_json(view: IssueView, base: str) -> dict[str, Any]:
    full = f"{view.owner}/{view.repo}"
    api = f"{base}/repos/{full}/issues/{view.number}"
    kind = "pull" if view.pull is not None else "issues"
    ident = _ident("issue", f"{full}#{view.number}")
    body: dict[str, Any] = {
        "url": api,
        "repository_url": f"{base}/repos/{full}",
        "labels_url": f"{api}/labels{{/name}}",
        "comments_url": f"{api}/comments",
        "events_url": f"{api}/events",
        "html_url": f"{base}/{full}/{kind}/{view.number}",
        "id": ident,
        "node_id": _node_id("I_", "issue", ident),
        "number": view.number,
        "title": view.title,
        "user": _user(view.user),
        "labels": [label_json(label, view.owner, view.repo, base) for label in view.labels],
        "state": view.state,
        "locked": False,
        "assignee": None,
        "assignees": [],
        "milestone": None,
        "comments": view.comments,
        "created_at": _time(view.created_at),
        "updated_at": _time(view.updated_at),
        "closed_at": _time(view.closed_at),
        "author_association": "MEMBER",
        "active_lock_reason": None,
        "body": view.body,
        "state_reason": view.state_reason,
    }
    if view.pull is not None:
        html = f"{base}/{full}/pull/{view.number}"
        body["draft"] = False
        body["pull_request"] = {"url": f"{base}/repos/{full}/pulls/{view.number}", "html_url": html,
                                "diff_url": f"{html}.diff", "patch_url": f"{html}.patch",
                                "merged_at": _time(view.pull.merged_at)}
    return body
