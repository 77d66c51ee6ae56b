"""Freshness: compare the event's version with the authoritative source's current state.

An item delivered now may point at an old commit or a closed pull request; only a
re-read of the source tells. This module is the pure comparison; the read itself is a
``TargetReader`` (see ``intake.ports``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Callable

from intake.decision import Reason
from intake.envelope import WorkCandidate


@dataclass(frozen=True)
class TargetSnapshot:
    """What the authoritative source says about a target right now."""

    exists: bool
    open: bool = False
    current_version: str | None = None
    draft: bool = False
    title: str = field(default="", compare=False)
    """The pull request's title as the source has it now, already through ``intake.hygiene.display_title``:
    display only (the Temporal UI), never part of a decision."""
    content_digest: str = ""
    """The target's content now, as a digest (an issue's title and body: ``sluicegate.forge.issue_digest``);
    ``""`` when the reader knows none."""


def titled(candidate: WorkCandidate, snapshot: TargetSnapshot) -> WorkCandidate:
    """``candidate`` with the source's title when it carries none (a manual trigger, a scan, a generic
    source's delivery): the freshness read already fetched it, so the run's summary and memo name the
    pull request without another read."""
    return candidate if candidate.title or not snapshot.title else replace(candidate, title=snapshot.title)


def assess_freshness(event_version: str | None, snapshot: TargetSnapshot, content_digest: str = "") -> Reason | None:
    """``None`` when fresh, else the reject reason. ``event_version=None`` means "current". A head sha is
    the content: ``content_digest`` (part of the rule's signature, ``intake.ports.FreshnessRule``) is unused."""
    if not snapshot.exists:
        return Reason.TARGET_NOT_FOUND
    if not snapshot.open:
        return Reason.TARGET_CLOSED
    if event_version is not None and event_version != snapshot.current_version:
        return Reason.STALE_VERSION
    return None


def assess_instant_freshness(event_version: str | None, snapshot: TargetSnapshot,
                             instant: Callable[[str], datetime], content_digest: str = "") -> Reason | None:
    """The freshness rule for a version that is a moment (an issue's ``updated_at``): ``None`` when
    fresh, else the reason. Versions are compared as instants (``instant`` parses one, ``ValueError``
    for anything else), never as strings, so two spellings of one moment are one version.

    A moment moves on activity that changes nothing the work reads (a comment, a label, an
    assignee), so *older* than the source's is stale only if the content changed: when both the
    event's ``content_digest`` and the snapshot's are known, equal digests → fresh (the caller admits
    at the event's version), different → ``stale-version`` (a newer edit carries the new content);
    either unknown (``""``: a manual trigger) → ``stale-version``. *Newer* than the source's →
    ``source-unavailable`` (defer: the API lags the event, and a reject would lose the work);
    unreadable → ``stale-version`` (never current). ``event_version=None`` means "current"."""
    if not snapshot.exists:
        return Reason.TARGET_NOT_FOUND
    if not snapshot.open:
        return Reason.TARGET_CLOSED
    if event_version is None or event_version == snapshot.current_version:
        return None
    try:
        event, current = instant(event_version), instant(snapshot.current_version or "")
    except ValueError:
        return Reason.STALE_VERSION
    if event < current:
        same_content = bool(content_digest) and content_digest == snapshot.content_digest
        return None if same_content else Reason.STALE_VERSION
    if event > current:
        return Reason.SOURCE_UNAVAILABLE
    return None
