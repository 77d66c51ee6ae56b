"""Admission policy: rules that can refuse fresh, well-formed work.

``POLICY_VERSION`` is recorded on every receipt so a decision can be explained against
the rules in force when it was made; bump it whenever a rule changes.
"""

from __future__ import annotations

from intake.decision import policy_reason
from intake.envelope import WorkCandidate
from intake.freshness import TargetSnapshot

POLICY_VERSION = "2026-11-29.1"


def evaluate_policy(candidate: WorkCandidate, snapshot: TargetSnapshot) -> str | None:
    """``None`` when permitted, else a ``policy:<rule>`` reason."""
    if snapshot.draft or candidate.draft:
        return policy_reason("draft")
    return None
