"""Stable work identity: the same pull request and task give the same key on every path.

Event, scan, manual and goal triggers must all call :func:`review_work_key`; if each path
built its own key, "reliability" would triple the work instead of deduplicating it.
"""

from __future__ import annotations

from intake.envelope import PullRequestRef

REVIEW_TASK = "review"


def review_work_key(ref: PullRequestRef, forge: str = "github") -> str:
    """``github:acme/api#42:review`` — lower-cased owner/repo, so case never splits work."""
    return f"{forge}:{ref.owner.lower()}/{ref.repo.lower()}#{ref.number}:{REVIEW_TASK}"


def workflow_id_for(work_key: str) -> str:
    """The Temporal workflow id for a work key: one workflow per work key."""
    return f"agent/{work_key}"
