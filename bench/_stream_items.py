"""The mixed stream's items: the kinds and what each should be answered, pull requests, deliveries.

Pure data (no I/O); ``bench/_stream.py`` draws a seeded stream of them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from intake.envelope import PullRequestRef
from intake.identity import review_work_key

KINDS = ("new", "redeliver", "stale")
EXPECTED = {"new": ("accept", "admitted"), "redeliver": ("reject", "duplicate-delivery"),
            "stale": ("reject", "stale-version")}
TENANT = "acme"
"""The tenant of the dev config's ``github`` source, which the stream is sent to (``BENCH_SCOPE``
in ``bench/_common.py`` adds the ``bench*`` owners to that source's repositories)."""
# A few owners ("tenants-ish": the github source itself has one configured tenant) and repositories.
REPOS = (("bench-north", "api"), ("bench-north", "web"), ("bench-south", "core"), ("bench-east", "mobile"))
# How a "new" item is realised when more than one way is possible.
P_DELIVER_MOVED_HEAD = 0.35  # a head moved by a stale item, never delivered: deliver it now
P_PUSH = 0.25                # push a new head to an opened pull request and deliver it


def sha_for(seed: int, owner: str, repo: str, number: int, k: int) -> str:
    """The k-th head commit of a pull request (deterministic, 40 hex)."""
    return hashlib.sha1(f"mixed/{seed}/{owner}/{repo}/{number}/{k}".encode()).hexdigest()


class _OnPullRequest:
    """A pull request's identity, for :class:`Pull` and :class:`Item` (both have these fields)."""

    owner: str
    repo: str
    number: int

    @property
    def pr(self) -> tuple[str, str, int]:
        return (self.owner, self.repo, self.number)

    @property
    def work_key(self) -> str:
        return review_work_key(TENANT, PullRequestRef(self.owner, self.repo, self.number))


@dataclass
class Pull(_OnPullRequest):
    owner: str
    repo: str
    number: int
    heads: list[str]
    """Every head the pull request had, in order; the last one is the current head."""
    delivered: set[str] = field(default_factory=set)
    opened: bool = False


@dataclass
class Item(_OnPullRequest):
    index: int
    kind: str
    """new | redeliver | stale (what the generator meant; see EXPECTED)."""
    how: str
    """opened | push | moved-head | redelivery | stale-admitted | stale-unseen."""
    owner: str
    repo: str
    number: int
    sha: str
    action: str
    delivery_id: str
    move_to: str | None = None
    """Move the forge head to this sha just before sending (stale, push)."""
    origin: int | None = None
    """redeliver: index of the original delivery that is re-sent."""
    deps: tuple[int, ...] = ()

    @property
    def expect(self) -> tuple[str, str]:
        return EXPECTED[self.kind]


@dataclass
class Stream:
    seed: int
    items: list[Item]
    pulls: list[Pull]

    @property
    def new_items(self) -> set[tuple[str, str]]:
        """Distinct (work key, head) pairs delivered as *new*: the unique work items."""
        return {(i.work_key, i.sha) for i in self.items if i.kind == "new"}

    def count(self, kind: str) -> int:
        return sum(i.kind == kind for i in self.items)
