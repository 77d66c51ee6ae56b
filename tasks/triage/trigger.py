"""The triage task's trigger mapping: GitHub ``issues`` events -> envelope + candidate.

Runs only on a delivery whose HMAC already verified (``intake.github.verify_github``), on a body the
API bounded; the payload is validated with pydantic like ``PullRequestEvent`` (extra fields
ignored, identities through ``intake.hygiene``). The issue's title is kept for display only
(``display_title``); its body is never kept here: it is untrusted text that reaches the model only
through the ``get_issue`` tool, bounded, and never a key or a decision. Title and body are only
hashed (``sluicegate.forge.issue_digest``, bounded) into the candidate's ``content_digest``, which
freshness compares with the issue's digest now (``tasks.triage.target``).

Actions: ``opened``, ``edited``, ``reopened`` ask for triage; every other ``issues`` action (closed,
labeled, assigned, ...) is valid and asks for no work (``not-actionable``). ``labeled`` and comment
events are no triggers, so the labels and the comment a triage run adds cannot trigger another run.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from intake.decision import Reason
from intake.envelope import PullRequestRef
from intake.errors import InvalidDelivery
from intake.github import GithubEvent
from intake.hygiene import MAX_NUMBER, display_title, repository
from intake.sources import ParsedDelivery
from intake.sources._common import utc
from sluicegate.forge.issue_digest import issue_content_digest
from tasks.triage.target import canonical_version, triage_candidate

TRIAGE_ACTIONS = frozenset({"opened", "edited", "reopened"})


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


def _repository(value: str) -> str:
    if repository(value) is None:
        raise ValueError("not owner/repo")
    return value


class _Repo(_Lenient):
    full_name: Annotated[str, AfterValidator(_repository)]


class _Issue(_Lenient):
    number: int = Field(gt=0, le=MAX_NUMBER, strict=True)
    state: str = Field(max_length=32)
    updated_at: datetime
    title: Any = None
    """Display only (``display_title``), and hashed with ``body`` (the content digest)."""
    body: Any = None
    """Only hashed (the content digest); never kept, logged or decided on."""


class IssuesEvent(_Lenient):
    """The part of GitHub's ``issues`` payload the triage task relies on."""

    action: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    issue: _Issue
    repository: _Repo


def map_issues(data: Any, event: GithubEvent) -> ParsedDelivery:
    """``issues`` -> the triage candidate at the issue's ``updated_at`` (canonical UTC)."""
    try:
        parsed = IssuesEvent.model_validate(data)
    except ValidationError as exc:
        raise event.invalid(exc) from None
    updated_at = utc(parsed.issue.updated_at)
    if updated_at is None:
        raise InvalidDelivery(Reason.BAD_INPUT, "issues payload invalid at: issue.updated_at "
                              "(outside years 1-9999 UTC)", 422, event.delivery_id, event.event)
    owner, _, repo = parsed.repository.full_name.partition("/")
    ref = PullRequestRef(owner, repo, parsed.issue.number)
    envelope = event.envelope(f"issues.{parsed.action}", ref.target_id, updated_at)
    if parsed.action not in TRIAGE_ACTIONS:
        return ParsedDelivery(envelope, None)
    issue = parsed.issue
    known = {"title", "body"} <= issue.model_fields_set  # a payload without them: content unknown
    digest = issue_content_digest(issue.title, issue.body) if known else ""
    candidate = triage_candidate(event.tenant, ref, canonical_version(updated_at), display_title(issue.title), digest)
    return ParsedDelivery(envelope, candidate)
