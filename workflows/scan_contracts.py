"""Payloads and stable names for the schedule (scan) and goal trigger families.

Pure: no Temporal or database imports, so the starter, the activities and the workflows
share them. One dataclass per workflow/activity argument; add fields only with defaults.
Activity and workflow names are stable strings: renaming one breaks running scans/goals.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from intake.decision import IntakeDecision, Reason

from workflows.names import (  # noqa: F401  (re-exported)
    GOAL_BOUND_ACTIVITY as GOAL_BOUND_ACTIVITY, GOAL_OBSERVE_ACTIVITY as GOAL_OBSERVE_ACTIVITY,
    GOAL_PROGRESS_QUERY as GOAL_PROGRESS_QUERY, GOAL_WORKFLOW as GOAL_WORKFLOW,
    INTAKE_SUBMIT_ACTIVITY as INTAKE_SUBMIT_ACTIVITY, SCAN_ADVANCE_ACTIVITY as SCAN_ADVANCE_ACTIVITY,
    SCAN_LIST_ACTIVITY as SCAN_LIST_ACTIVITY, SCAN_NO_WORK_ACTIVITY as SCAN_NO_WORK_ACTIVITY,
    SCAN_WORKFLOW as SCAN_WORKFLOW,
)

# Receipt reasons of these trigger families (outcome ``no-work``), as plain strings for payloads.
NOTHING_CHANGED = Reason.NOTHING_CHANGED.value
GOAL_BOUND_REACHED = Reason.GOAL_BOUND_REACHED.value

SCAN_EVENT_TYPE = "scan.pull_request"
SCAN_NO_WORK_EVENT_TYPE = "scan"


def scan_source(scan_id: str) -> str:
    """The receipt ``source`` of a scan: ``scan:<schedule id>``."""
    return f"scan:{scan_id}"


# --- scan ----------------------------------------------------------------------------------------


@dataclass
class ScanRequest:
    """The argument of one scan (the action of a schedule, or started directly)."""

    scan_id: str
    """The schedule id; keys the watermark and names the receipt source ``scan:<scan_id>``."""
    tenant: str
    repos: list[str]
    """``owner/repo`` names whose open pull requests are read."""
    max_candidates: int = 200
    activity_timeout_seconds: float = 60
    activity_max_attempts: int = 5


@dataclass
class ScanCandidate:
    """An open pull request updated since the watermark, as listed by the forge."""

    owner: str
    repo: str
    number: int
    head_sha: str
    updated_at: str
    """The forge's ``updated_at`` (ISO 8601), the watermark's unit."""
    draft: bool = False

    @property
    def target_id(self) -> str:
        return f"{self.owner}/{self.repo}#{self.number}"

    @property
    def boundary_key(self) -> str:
        return f"{self.number}@{self.head_sha}"


@dataclass
class ListCandidatesRequest:
    scan_id: str
    repo: str
    limit: int
    tenant: str = ""
    """Whose credentials list the repository (a GitHub App installation per tenant)."""


@dataclass
class CandidatePage:
    repo: str
    candidates: list[ScanCandidate]
    """Oldest ``updated_at`` first; at most ``limit``."""
    watermark: str | None
    """The stored watermark the listing was filtered with (``None``: first scan)."""
    open_pulls: int
    truncated: bool = False
    """More candidates than ``limit``: the rest are left for the next scan."""


@dataclass
class AdvanceWatermarkRequest:
    scan_id: str
    repo: str
    decided: list[ScanCandidate]
    """Candidates that got a decision (a prefix of the page, oldest first)."""


@dataclass
class WatermarkState:
    scan_id: str
    repo: str
    updated_at: str | None
    boundary: list[str] = field(default_factory=list)
    """``<number>@<head sha>`` already decided at exactly ``updated_at``."""


@dataclass
class ScanResult:
    scan_id: str
    candidates: int = 0
    decisions: list[IntakeDecision] = field(default_factory=list)
    deferred: int = 0
    watermarks: list[WatermarkState] = field(default_factory=list)
    no_work_receipt_id: str | None = None
    truncated: list[str] = field(default_factory=list)
    """Repositories with more candidates than ``max_candidates`` this scan."""


# --- intake --------------------------------------------------------------------------------------


@dataclass
class IntakeRequest:
    """One trigger for ``sluicegate.intake.submit``: becomes an envelope + work candidate."""

    trigger_kind: str
    """``schedule`` | ``goal`` (any ``TriggerKind`` value)."""
    source: str
    delivery_id: str
    """Deterministic per run and candidate, so an activity retry is a duplicate delivery."""
    event_type: str
    tenant: str
    owner: str
    repo: str
    number: int
    input_version: str | None
    draft: bool = False
    emitted_at: str | None = None
    actor: str | None = None


@dataclass
class ReceiptRequest:
    """A receipt with no decision pipeline behind it (``no-work`` of a scan or a goal)."""

    trigger_kind: str
    source: str
    delivery_id: str
    event_type: str
    tenant: str
    reason: str
    message: str
    subject: str | None = None
    work_key: str | None = None
    target_id: str | None = None
    input_version: str | None = None


@dataclass
class ReceiptRef:
    receipt_id: str
    already_recorded: bool = False


# The goal family's payloads live in workflows/goal_contracts.py; re-exported for older imports.
from workflows.goal_contracts import (  # noqa: E402,F401
    GOAL_CONDITIONS as GOAL_CONDITIONS, GOAL_SOURCE as GOAL_SOURCE, GoalCondition as GoalCondition,
    GoalRequest as GoalRequest, GoalResult as GoalResult, Observation as Observation,
    ObserveRequest as ObserveRequest,
)
