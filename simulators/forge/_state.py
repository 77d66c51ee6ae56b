"""In-memory forge state: repositories, pull requests, issues, labels, comments, counters.

Every public method takes one ``threading.RLock``; values handed out are
copies, so callers (HTTP handlers on the server thread, tests on another
thread) never observe a half-applied change.

Reset semantics: ``reset()`` re-reads the fixtures (pulls and issues, labels
back to the fixtures' and GitHub's defaults), drops all comments, issues and
labels made since, zeroes the request counters, clears faults, registered users and rate-limit
budgets, and restores the GitHub App given at start-up (tokens issued so far
are forgotten). The comment id sequence is
*not* rewound, so an id seen before a reset never names a different
comment afterwards (a client-side ledger may have stored it).

Issues (``_issues``): a plain issue and a pull never share a number in a
repository (``ValueError`` from the upserts). Adding labels or commenting on
a plain issue bumps its ``updated_at`` (to the clock, never backwards) when
something changed; a comment on a pull leaves the pull as it is (its ETag
holds), a label change on a pull bumps it like an issue.

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

from simulators._faults import FaultDelays, FaultList
from simulators.forge._apps import GitHubApps
from simulators.forge._identity import Users
from simulators.forge._issues import (
    DEFAULT_LABELS,
    MAX_LABELS_PER_ISSUE,
    Issue,
    IssueView,
    Label,
    check_label_names,
    load_issues,
)
from simulators.forge._ratelimits import RateLimits
from simulators.forge._records import (
    DEFAULT_FIXTURES,
    Comment,
    FixtureError,
    PullRequest,
    check_sha,
    check_state,
    load_fixtures,
    parse_time,
)

__all__ = ["ForgeState"]

_EDITABLE = {"head_sha", "base_sha", "state", "diff", "title", "head_ref", "base_ref", "body", "user", "merged"}
_ISSUE_EDITABLE = {"title", "body", "state", "labels", "user", "updated_at"}
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
        self.delays = FaultDelays()
        """The hangs and stalls faults impose, ended early by ``POST /_sim/faults/release``."""
        self.apps = GitHubApps(is_pull=self.is_pull)
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
        try:
            issues = load_issues(self.fixtures_dir, self.clock())
        except (OSError, ValueError) as exc:
            raise FixtureError(str(exc)) from exc
        clash = [i.number for i, _ in issues if any(
            _key(p.owner, p.repo) == _key(i.owner, i.repo) and p.number == i.number for p in pulls)]
        if clash:
            raise FixtureError(f"issue numbers {clash} are also pull request numbers")
        with self._lock:
            self._repos = {_key(o, r): (o, r) for o, r in repos}
            self._pulls = {(*_key(p.owner, p.repo), p.number): p for p in pulls}
            self._labels: dict[tuple[str, str], dict[str, Label]] = {}
            self._pull_labels: dict[tuple[str, str, int], tuple[str, ...]] = {}
            self._issues: dict[tuple[str, str, int], Issue] = {}
            for issue, names in issues:
                issue.labels = self._resolve(issue.owner, issue.repo, names)
                self._issues[(*_key(issue.owner, issue.repo), issue.number)] = issue
            self._issue_reads: Counter[str] = Counter()
            self._label_writes = 0
            self._next_pull_id = len(pulls) + 1
            self._comments: list[Comment] = []
            self._comment_counts: Counter[tuple[str, str, int]] = Counter()
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
            if key in self._issues:
                raise ValueError(f"#{number} is an issue in {owner}/{repo}, not a pull request")
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
        """Store a comment on an existing pull or issue; ``None`` if neither exists."""
        now = self.clock()
        with self._lock:
            key = (*_key(owner, repo), number)
            target: PullRequest | Issue | None = self._pulls.get(key) or self._issues.get(key)
            if target is None:
                return None
            if isinstance(target, Issue):
                target.updated_at = max(now, target.updated_at)
            comment = Comment(
                id=self._next_comment_id, owner=target.owner, repo=target.repo, number=number,
                body=body, user=user or self.commenter, created_at=now, updated_at=now,
                on_pull=isinstance(target, PullRequest),
            )  # fmt: skip
            self._next_comment_id += 1
            self._comments.append(comment)
            self._comment_counts[key] += 1
            self._comments_posted += 1
            return comment

    def list_comments(self, owner: str, repo: str, number: int) -> list[Comment] | None:
        key = (*_key(owner, repo), number)
        with self._lock:
            if key not in self._pulls and key not in self._issues:
                return None
            return [c for c in self._comments if (*_key(c.owner, c.repo), c.number) == key]

    def all_comments(self) -> list[Comment]:
        with self._lock:
            return list(self._comments)

    # -- issues and labels -----------------------------------------------------
    def is_pull(self, owner: str, repo: str, number: int) -> bool:
        with self._lock:
            return (*_key(owner, repo), number) in self._pulls

    def has_issue(self, owner: str, repo: str, number: int) -> bool:
        """Is there a plain issue or a pull with this number (both take issue comments and labels)?"""
        key = (*_key(owner, repo), number)
        with self._lock:
            return key in self._pulls or key in self._issues

    def _resolve(self, owner: str, repo: str, names: list[str]) -> tuple[str, ...]:
        """The repository's spelling of ``names``, creating unknown labels (lock held)."""
        catalogue = self._labels.setdefault(_key(owner, repo), {label.name.lower(): label for label in DEFAULT_LABELS})
        for name in names:
            catalogue.setdefault(name.lower(), Label(name))
        return tuple(sorted({catalogue[n.lower()].name for n in names}, key=str.lower))

    def _view(self, key: tuple[str, str, int]) -> IssueView | None:
        """A plain issue or a pull, as an issue (lock held)."""
        pull, issue = self._pulls.get(key), self._issues.get(key)
        if pull is None and issue is None:
            return None
        catalogue = self._labels.get(key[:2], {})
        names = issue.labels if issue is not None else self._pull_labels.get(key, ())
        labels = tuple(catalogue[n.lower()] for n in names)
        comments = self._comment_counts[key]
        if issue is not None:
            return IssueView(issue.owner, issue.repo, issue.number, issue.title, issue.body, issue.state, issue.user,
                             labels, comments, issue.created_at, issue.updated_at, issue.closed_at,
                             issue.state_reason)
        assert pull is not None
        return IssueView(pull.owner, pull.repo, pull.number, pull.title, pull.body, pull.state, pull.user, labels,
                         comments, pull.created_at, pull.updated_at, pull.closed_at, None,  # GitHub: null for pulls
                         dataclasses.replace(pull))

    def get_issue(self, owner: str, repo: str, number: int) -> IssueView | None:
        with self._lock:
            return self._view((*_key(owner, repo), number))

    def add_labels(self, owner: str, repo: str, number: int, names: list[str]) -> IssueView | None:
        """Add labels (a set union) to an issue or pull; ``None`` if neither exists, ``ValueError`` if the
        issue would carry more than GitHub's limit. Bumps ``updated_at`` if the set changed."""
        now = self.clock()
        with self._lock:
            key = (*_key(owner, repo), number)
            issue, pull = self._issues.get(key), self._pulls.get(key)
            if issue is None and pull is None:
                return None
            before = issue.labels if issue is not None else self._pull_labels.get(key, ())
            if len({n.lower() for n in (*before, *names)}) > MAX_LABELS_PER_ISSUE:
                raise ValueError(f"an issue carries at most {MAX_LABELS_PER_ISSUE} labels")
            after = self._resolve(key[0], key[1], [*before, *names])
            if after != before and issue is not None:
                issue.labels, issue.updated_at = after, max(now, issue.updated_at)
            elif after != before and pull is not None:
                self._pull_labels[key] = after
                pull.updated_at = max(now, pull.updated_at)
            self._label_writes += 1
            return self._view(key)

    def upsert_issue(self, owner: str, repo: str, number: int, changes: Mapping[str, Any]) -> IssueView:
        """Create or update a plain issue (``ValueError`` on bad fields or a pull's number). ``labels``
        replaces the set; ``updated_at`` (ISO 8601) is taken as given, else it moves to the clock."""
        unknown = set(changes) - _ISSUE_EDITABLE
        if unknown:
            raise ValueError(f"unknown fields: {sorted(unknown)}")
        for field in ("title", "user"):
            if field in changes and (not isinstance(changes[field], str) or not changes[field].strip()):
                raise ValueError(f"{field} must be a non-empty string")
        if "body" in changes and changes["body"] is not None and not isinstance(changes["body"], str):
            raise ValueError("body must be a string or null")
        if "state" in changes:
            check_state(changes["state"])
        names = check_label_names(changes["labels"]) if "labels" in changes else None
        if names is not None and len({n.lower() for n in names}) > MAX_LABELS_PER_ISSUE:
            raise ValueError(f"an issue carries at most {MAX_LABELS_PER_ISSUE} labels")
        stamp = changes.get("updated_at")
        if stamp is not None and not isinstance(stamp, str):
            raise ValueError("updated_at must be an ISO 8601 string")
        now = self.clock()
        when = parse_time(stamp) if stamp is not None else None  # ValueError if unparsable
        with self._lock:
            key = (*_key(owner, repo), number)
            if key in self._pulls:
                raise ValueError(f"#{number} is a pull request in {owner}/{repo}; use /_sim/pulls")
            issue = self._issues.get(key) or Issue(
                owner=owner, repo=repo, number=number, title=f"Simulated issue #{number}", body=None, state="open",
                user="octocat", labels=(), created_at=now, updated_at=now)
            was = issue.state
            issue = dataclasses.replace(issue, **{k: v for k, v in changes.items() if k in ("title", "body", "user",
                                                                                              "state")})
            if names is not None:
                issue.labels = self._resolve(owner, repo, names)
            issue.updated_at = when if when is not None else max(now, issue.updated_at)
            if issue.state == "closed" and was != "closed":
                issue.closed_at, issue.state_reason = issue.updated_at, "completed"
            elif issue.state == "open" and was == "closed":
                issue.closed_at, issue.state_reason = None, "reopened"
            self._repos.setdefault(key[:2], (owner, repo))
            self._issues[key] = issue
            view = self._view(key)
            assert view is not None
            return view

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

    def record_issue_read(self, kind: str) -> None:
        """Count one answered issue read: ``json`` (200) or ``not_modified`` (304)."""
        with self._lock:
            self._issue_reads[kind] += 1

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {
                "pull_reads": {k: self._pull_reads[k] for k in ("json", "diff", "not_modified")},
                "total": sum(self._requests.values()),
                "requests": dict(sorted(self._requests.items())),
                "by_repository": dict(sorted(self._by_repository.items())),
                "comments_posted": self._comments_posted,
                "issue_reads": {k: self._issue_reads[k] for k in ("json", "not_modified")},
                "label_writes": self._label_writes,
            }
