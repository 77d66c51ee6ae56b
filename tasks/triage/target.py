"""The triage task's identity, target read and freshness rule.

Work key ``<tenant>/github:<owner>/<repo>#<n>:triage`` (lower-cased owner/repo, like review's);
the input version is the issue's ``updated_at`` in one canonical form, ``YYYY-MM-DDTHH:MM:SSZ`` (UTC),
so the payload's and the API's spelling of one instant are one version.

Freshness compares instants, not strings:

* the issue is missing, or is a pull request (GitHub's issues endpoint answers pull requests too:
  ``pull_request`` present) -> ``target-not-found``: a pull request is the review task's target;
* closed -> ``target-closed``;
* the event's ``updated_at`` is older than the issue's now: ``updated_at`` also moves on a comment, a
  label or an assignee (a welcome bot's comment, our own labels), so it is ``stale-version`` only if
  the issue's *content* changed: the digest of (title, body) the event carried
  (``WorkCandidate.content_digest``) differs from the digest of the issue as the API answers it now
  (``TargetSnapshot.content_digest``). Same content -> fresh, admitted at the event's version. A
  candidate without a digest (a manual trigger) -> ``stale-version``, as before;
* newer than what the API answers -> ``source-unavailable``: the API lags behind the event, which must
  not be lost; intake defers it (queued, re-decided with backoff) instead of rejecting it.

Pure except :class:`IssueReader` (one conditional forge read; a 404 is an answer, any other error
means the source cannot be read now, exactly like ``intake.forge_reader``).
"""

from __future__ import annotations

from datetime import UTC, datetime

from intake.decision import Reason
from intake.envelope import PullRequestRef, WorkCandidate
from intake.freshness import TargetSnapshot, assess_instant_freshness
from intake.hygiene import display_title
from intake.identity import work_key_for
from intake.forge_reader import authoritative_read
from sluicegate.forge.client import ForgeClient
from sluicegate.forge.issue_digest import DIGEST_FIELD

TRIAGE_TASK = "triage"


def triage_work_key(tenant: str, ref: PullRequestRef, forge: str = "github") -> str:
    """``acme/github:acme/api#7:triage``."""
    return work_key_for(tenant, ref, TRIAGE_TASK, forge)


def parse_version(value: str) -> datetime:
    """An ``updated_at`` (ISO 8601, with an offset or ``Z``) as an aware UTC instant, whole seconds;
    ``ValueError`` for anything else (a naive time is not one, nor a moment outside years 1-9999 in UTC)."""
    if not isinstance(value, str) or len(value) > 40:
        raise ValueError("not an updated_at timestamp")
    return _utc(datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value))


def _utc(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        raise ValueError("updated_at needs a time zone (Z or an offset)")
    try:
        return moment.astimezone(UTC).replace(microsecond=0)
    except OverflowError:
        raise ValueError("updated_at is outside years 1-9999 in UTC") from None


def canonical_version(value: str | datetime) -> str:
    """The canonical form of an ``updated_at``: ``YYYY-MM-DDTHH:MM:SSZ``, the year always four digits
    (``parse_version`` reads it back to the same instant); ``ValueError`` like :func:`parse_version`."""
    moment = parse_version(value) if isinstance(value, str) else _utc(value)
    return (f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
            f"T{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}Z")


def triage_candidate(tenant: str, ref: PullRequestRef, input_version: str | None, title: str = "",
                     content_digest: str = "") -> WorkCandidate:
    """The candidate for triaging issue ``ref``; the version canonical (``ValueError`` if it is none);
    ``content_digest``: the event's issue content (``sluicegate.forge.issue_digest``), ``""`` unknown."""
    version = canonical_version(input_version) if input_version is not None else None
    return WorkCandidate(work_key=triage_work_key(tenant, ref), target=ref, input_version=version, tenant=tenant,
                         title=title, content_digest=content_digest)


def triage_freshness(event_version: str | None, snapshot: TargetSnapshot, content_digest: str = "") -> Reason | None:
    """Intake's rule for a version that is a moment, with ``updated_at`` parsed as this task parses it;
    older but the same content (``content_digest``) is fresh (module docstring)."""
    return assess_instant_freshness(event_version, snapshot, parse_version, content_digest)


class IssueReader:
    """The authoritative read of an issue (``GET /repos/{o}/{r}/issues/{n}``, conditional)."""

    def __init__(self, forge: ForgeClient) -> None:
        self._forge = forge

    async def read(self, ref: PullRequestRef, tenant: str | None = None) -> TargetSnapshot:
        issue = await authoritative_read(self._forge.get_issue(ref.owner, ref.repo, ref.number, tenant=tenant))
        if not isinstance(issue, dict) or issue.get("pull_request"):  # None: a 404
            return TargetSnapshot(exists=False)  # a pull request: the review task's target, never triaged
        try:
            version: str | None = canonical_version(str(issue.get("updated_at") or ""))
        except ValueError:
            version = None
        digest = issue.get(DIGEST_FIELD)
        return TargetSnapshot(exists=True, open=issue.get("state") == "open", current_version=version,
                              title=display_title(issue.get("title")),
                              content_digest=digest if isinstance(digest, str) else "")
