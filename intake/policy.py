"""Admission policy: rules that can refuse fresh, well-formed work, under a version.

The policy's ``version`` is recorded on every receipt the ledger writes, so a decision can be
explained against the rules in force when it was made. Operators change rules in configuration
(``intake.policy_*``) and bump ``intake.policy_version`` with them; the version is what makes the
change *live* for work decided under an older one:

* a deferred item is re-decided by the dispatcher with the policy in force (its receipt names the
  version that decided);
* an admitted order that has not taken its first step re-checks the policy there when its order
  names another version (``activities/policy_recheck.py``, patch ``policy-first-step``);
* a version that ended ``done`` is not admitted again after a policy change, unless
  ``rerun_done_on_change`` says so.

Versions are opaque labels: any version other than the current one counts as older (versions
only move forward in a deployment; see docs/runbook.md for a rolling upgrade).
"""

from __future__ import annotations

from dataclasses import dataclass

from intake.decision import policy_reason
from intake.envelope import PullRequestRef, WorkCandidate
from intake.freshness import TargetSnapshot
from intake.scope import repository_in_scope

RECHECK_UNAVAILABLE = policy_reason("recheck-unavailable")
"""An admitted order whose policy re-check could not read its target through every attempt (it does not run)."""

POLICY_VERSION = "2026-11-29.1"
"""The default version (the built-in rules with no ``intake.policy_*`` settings)."""


@dataclass(frozen=True)
class Policy:
    version: str = POLICY_VERSION
    refuse_repositories: tuple[str, ...] = ()
    """``owner/repo`` globs refused ``policy:repository-refused`` (matched like scope globs: case-insensitive,
    ``*`` never crosses the ``/``)."""
    rerun_done_on_change: bool = False
    """May a version that ended ``done`` under another policy version be admitted again?"""

    def evaluate(self, candidate: WorkCandidate, snapshot: TargetSnapshot) -> str | None:
        """``None`` when permitted, else a ``policy:<rule>`` reason."""
        if snapshot.draft or candidate.draft:
            return policy_reason("draft")
        return self.evaluate_unread(candidate)

    def evaluate_unread(self, candidate: WorkCandidate) -> str | None:
        """The verdict of the rules that need no target read (repository refusals); ``None`` when they permit."""
        if self.refuses_repository(candidate.target):
            return policy_reason("repository-refused")
        return None

    def refuses_repository(self, target: PullRequestRef) -> bool:
        return repository_in_scope(target.owner, target.repo, self.refuse_repositories)

    def changed_since(self, recorded: str | None) -> bool:
        """Was work recorded under ``recorded`` decided by another (older) policy version? ``None``
        (a row that does not know its version) counts as unchanged: nothing proves it older."""
        return recorded is not None and recorded != self.version

    def reruns_done(self, done_under: str | None) -> bool:
        """Does a policy change lift the ``done`` block of a version decided under ``done_under``?"""
        return self.rerun_done_on_change and self.changed_since(done_under)


def recheck_unreadable(attempt: int, max_attempts: int) -> str | None:
    """The policy re-check's verdict when the target cannot be read on attempt ``attempt``: ``None``
    (retry) before the last attempt, then ``policy:recheck-unavailable`` (fail closed: the order does
    not run). ``max_attempts`` 0 (a run from before the patch) never refuses for an outage."""
    return RECHECK_UNAVAILABLE if max_attempts and attempt >= max_attempts else None


def evaluate_policy(candidate: WorkCandidate, snapshot: TargetSnapshot) -> str | None:
    """The default policy's verdict (``Policy().evaluate``)."""
    return Policy().evaluate(candidate, snapshot)
