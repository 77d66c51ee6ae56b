"""Forge records (pull requests, comments) and fixture loading.

Fixtures are JSON files, one per repository, read in file-name order so
that ids assigned on seeding are deterministic. A malformed fixture raises
``FixtureError`` naming the file and the problem; the simulator refuses to
start rather than serve half a data set.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = [
    "DEFAULT_FIXTURES",
    "Comment",
    "FixtureError",
    "PullRequest",
    "format_time",
    "load_fixtures",
    "parse_time",
]

DEFAULT_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "forge"
_SHA = re.compile(r"^[0-9a-f]{40}$")
_REQUIRED = ("number", "state", "title", "user", "head_ref", "head_sha", "base_ref", "base_sha", "diff")


class FixtureError(ValueError):
    """A forge fixture file is missing, unreadable or malformed."""


def parse_time(value: str) -> datetime:
    """Parse ISO 8601 (``Z`` or offset); naive values are taken as UTC."""
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def format_time(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class PullRequest:
    owner: str
    repo: str
    number: int
    id: int
    state: str
    title: str
    user: str
    body: str | None
    head_ref: str
    head_sha: str
    base_ref: str
    base_sha: str
    diff: str
    created_at: datetime
    updated_at: datetime
    closed_at: datetime | None = None
    merged: bool = False
    merged_at: datetime | None = None


@dataclass(frozen=True)
class Comment:
    id: int
    owner: str
    repo: str
    number: int
    body: str
    user: str
    created_at: datetime
    updated_at: datetime
    on_pull: bool = True
    """On a pull request (``html_url`` .../pull/n) or on a plain issue (.../issues/n)."""


def check_sha(value: Any, field: str) -> str:
    if not isinstance(value, str) or not _SHA.match(value):
        raise ValueError(f"{field} must be 40 lowercase hex characters")
    return value


def check_state(value: Any) -> str:
    if value not in ("open", "closed"):
        raise ValueError("state must be 'open' or 'closed'")
    return str(value)


def _pull_from_fixture(raw: dict[str, Any], owner: str, repo: str, pull_id: int, now: datetime) -> PullRequest:
    missing = [k for k in _REQUIRED if k not in raw]
    if missing:
        raise ValueError(f"pull is missing {missing}")
    number = raw["number"]
    if isinstance(number, bool) or not isinstance(number, int) or number < 1:
        raise ValueError("number must be a positive integer")
    created = parse_time(raw["created_at"]) if raw.get("created_at") else now
    updated = parse_time(raw["updated_at"]) if raw.get("updated_at") else created
    state = check_state(raw["state"])
    merged = bool(raw.get("merged", False))
    return PullRequest(
        owner=owner,
        repo=repo,
        number=number,
        id=pull_id,
        state=state,
        title=str(raw["title"]),
        user=str(raw["user"]),
        body=raw.get("body"),
        head_ref=str(raw["head_ref"]),
        head_sha=check_sha(raw["head_sha"], "head_sha"),
        base_ref=str(raw["base_ref"]),
        base_sha=check_sha(raw["base_sha"], "base_sha"),
        diff=str(raw["diff"]),
        created_at=created,
        updated_at=updated,
        closed_at=updated if state == "closed" else None,
        merged=merged,
        merged_at=updated if merged else None,
    )


def load_fixtures(directory: Path, now: datetime) -> tuple[list[tuple[str, str]], list[PullRequest]]:
    """Load every ``*.json`` in ``directory`` (sorted): ``(repos, pulls)``."""
    if not directory.is_dir():
        raise FixtureError(f"fixtures directory not found: {directory}")
    repos: list[tuple[str, str]] = []
    pulls: list[PullRequest] = []
    for path in sorted(directory.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            owner, repo = str(data["owner"]), str(data["repo"])
            repos.append((owner, repo))
            seen: set[int] = set()
            for raw in data.get("pulls", []):
                pull = _pull_from_fixture(raw, owner, repo, len(pulls) + 1, now)
                if pull.number in seen:
                    raise ValueError(f"duplicate pull number {pull.number}")
                seen.add(pull.number)
                pulls.append(pull)
        except (OSError, KeyError, TypeError, ValueError) as exc:
            raise FixtureError(f"{path.name}: {exc!r}") from exc
    return repos, pulls
