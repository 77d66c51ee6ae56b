"""Freshness: compare the event's version with the authoritative source's current state.

An item delivered now may point at an old commit or a closed pull request; only a
re-read of the source tells. This module is the pure comparison; the read itself is a
``TargetReader`` (see ``intake.ports``).
"""

from __future__ import annotations

from dataclasses import dataclass

from intake.decision import Reason


@dataclass(frozen=True)
class TargetSnapshot:
    """What the authoritative source says about a target right now."""

    exists: bool
    open: bool = False
    current_version: str | None = None
    draft: bool = False


def assess_freshness(event_version: str | None, snapshot: TargetSnapshot) -> Reason | None:
    """``None`` when fresh, else the reject reason. ``event_version=None`` means "current"."""
    if not snapshot.exists:
        return Reason.TARGET_NOT_FOUND
    if not snapshot.open:
        return Reason.TARGET_CLOSED
    if event_version is not None and event_version != snapshot.current_version:
        return Reason.STALE_VERSION
    return None
