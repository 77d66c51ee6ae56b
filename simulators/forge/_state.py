"""In-memory forge state: repositories, pull requests, comments, counters.

Every public method takes one ``threading.RLock``; values handed out are
copies, so callers (HTTP handlers on the server thread, tests on another
thread) never observe a half-applied change.

Reset semantics: ``reset()`` re-reads the fixtures, drops all comments,
zeroes the request counters, clears faults, registered users and rate-limit
budgets, and restores the GitHub App given at start-up (tokens issued so far
are forgotten). The comment id sequence is
*not* rewound, so an id seen before a reset never names a different
comment afterwards (a client-side ledger may have stored it).

Failure modes: an unreadable fixture directory raises ``FixtureError``
from the constructor and from ``reset()`` (the old data is kept then).
"""

from __future__ import annotations

import dataclasses
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from simulators._faults import FaultList
from simulators.forge._apps import GitHubApps
from simulators.forge._identity import Users
from simulators.forge._ratelimits import RateLimits
from simulators.forge._records import (
    DEFAULT_FIXTURES,
    Comment,
    PullRequest,
    check_sha,
    check_state,
    load_fixtures,
)

__all__ = ["ForgeState"]

_EDITABLE = {"head_sha", "base_sha", "state", "diff", "title", "head_ref", "base_ref", "body", "user", "merged"}
_FIRST_COMMENT_ID = 1_000_001


def _utcnow() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def _key(owner: str, repo: str) -> tuple[str, str]:
    return owner.lower(), repo.lower()


class ForgeState:
    """Thread-safe state for the forge simulator."""

    def __init__(
        self,
        fixtures_dir: str | Path | None = None,
        *,
        clock: Callable[[], datetime] = _utcnow,
        commenter: str = "sluicegate-bot",
    ) -> None:
        self.fixtures_dir = Path(fixtures_dir) if fixtures_dir is not None else DEFAULT_FIXTURES
        self.clock = clock
        self.commenter = commenter
        self.faults = FaultList()
        self.apps = GitHubApps()
        """GitHub App mode (``_apps``): off until an app is registered."""
        self.users = Users()
        """Tokens of users other than the bot (``_identity``)."""
        self.rate_limits = RateLimits()
        """Primary and secondary rate limits (``_ratelimits``)."""
        self._lock = threading.RLock()
        self._next_comment_id = _FIRST_COMMENT_ID
        self.reset()

    # -- lifecycle ---------------------------------------------------------
    def reset(self) -> None:
        repos, pulls = load_fixtures(self.fixtures_dir, self.clock())
        with self._lock:
            self._repos = {_key(o, r): (o, r) for o, r in repos}
            self._pulls = {(*_key(p.owner, p.repo), p.number): p for p in pulls}
            self._next_pull_id = len(pulls) + 1
            self._comments: list[Comment] = []
            self._requests: Counter[str] = Counter()
            self._by_repository: Counter[str] = Counter()
            self._comments_posted = 0
            self._pull_reads: Counter[str] = Counter()
            self.faults.clear()
        self.apps.reset()
        self.users.clear()
        self.rate_limits.reset()

    # -- pull requests -------------------------------------------------------
    def has_repo(self, owner: str, repo: str) -> bool:
        with self._lock:
            return _key(owner, repo) in self._repos

    def get_pull(self, owner: str, repo: str, number: int) -> PullRequest | None:
        with self._lock:
            pull = self._pulls.get((*_key(owner, repo), number))
            return dataclasses.replace(pull) if pull else None

    def list_pulls(self, owner: str, repo: str) -> list[PullRequest] | None:
        """All pulls of a repository, by number; ``None`` if unknown."""
        key = _key(owner, repo)
        with self._lock:
            if key not in self._repos:
                return None
            found = [dataclasses.replace(p) for k, p in self._pulls.items() if k[:2] == key]
        return sorted(found, key=lambda p: p.number)

    def upsert_pull(self, owner: str, repo: str, number: int, changes: Mapping[str, Any]) -> PullRequest:
        """Create or update a pull (``ValueError`` on bad fields)."""
        unknown = set(changes) - _EDITABLE
        if unknown:
            raise ValueError(f"unknown fields: {sorted(unknown)}")
        for field, value in changes.items():
            if field == "merged" and not isinstance(value, bool):
                raise ValueError("merged must be a boolean")
            if field not in ("merged", "body") and not isinstance(value, str):
                raise ValueError(f"{field} must be a string")
            if field == "body" and value is not None and not isinstance(value, str):
                raise ValueError("body must be a string or null")
        for field in ("head_sha", "base_sha"):
            if field in changes:
                check_sha(changes[field], field)
        if "state" in changes:
            check_state(changes["state"])
        now = self.clock()
        with self._lock:
            key = (*_key(owner, repo), number)
            pull = self._pulls.get(key)
            if pull is None:
                pull = self._new_pull(owner, repo, number, now)
            updated = dataclasses.replace(pull, **dict(changes), updated_at=max(now, pull.updated_at))
            if updated.merged and not pull.merged:
                updated.state, updated.merged_at = "closed", now
            if updated.state == "closed" and pull.state != "closed":
                updated.closed_at = now
            elif updated.state == "open":
                updated.closed_at, updated.merged = None, False
            if not updated.merged:
                updated.merged_at = None
            self._repos.setdefault(key[:2], (owner, repo))
            self._pulls[key] = updated
            return dataclasses.replace(updated)

    def _new_pull(self, owner: str, repo: str, number: int, now: datetime) -> PullRequest:
        pull_id, self._next_pull_id = self._next_pull_id, self._next_pull_id + 1
        return PullRequest(
            owner=owner, repo=repo, number=number, id=pull_id, state="open",
            title=f"Simulated pull request #{number}", user="octocat", body=None,
            head_ref=f"sim/pr-{number}", head_sha="0" * 40, base_ref="main", base_sha="0" * 40,
            diff="", created_at=now, updated_at=now,
        )  # fmt: skip

    # -- comments ------------------------------------------------------------
    def add_comment(self, owner: str, repo: str, number: int, body: str, user: str | None = None) -> Comment | None:
        """Store a comment on an existing pull; ``None`` if it does not exist."""
        now = self.clock()
        with self._lock:
            pull = self._pulls.get((*_key(owner, repo), number))
            if pull is None:
                return None
            comment = Comment(
                id=self._next_comment_id, owner=pull.owner, repo=pull.repo, number=number,
                body=body, user=user or self.commenter, created_at=now, updated_at=now,
            )  # fmt: skip
            self._next_comment_id += 1
            self._comments.append(comment)
            self._comments_posted += 1
            return comment

    def list_comments(self, owner: str, repo: str, number: int) -> list[Comment] | None:
        key = (*_key(owner, repo), number)
        with self._lock:
            if key not in self._pulls:
                return None
            return [c for c in self._comments if (*_key(c.owner, c.repo), c.number) == key]

    def all_comments(self) -> list[Comment]:
        with self._lock:
            return list(self._comments)

    # -- accounting ----------------------------------------------------------
    def record_request(self, key: str, repository: str | None = None) -> None:
        """Count one request by route and, for ``/repos/{owner}/{repo}/...``, by repository."""
        with self._lock:
            self._requests[key] += 1
            if repository is not None:
                self._by_repository[repository.lower()] += 1

    def record_pull_read(self, kind: str) -> None:
        """Count one answered pull read: ``json`` (200), ``diff`` (200) or ``not_modified`` (304)."""
        with self._lock:
            self._pull_reads[kind] += 1

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {
                "pull_reads": {k: self._pull_reads[k] for k in ("json", "diff", "not_modified")},
                "total": sum(self._requests.values()),
                "requests": dict(sorted(self._requests.items())),
                "by_repository": dict(sorted(self._by_repository.items())),
                "comments_posted": self._comments_posted,
            }
