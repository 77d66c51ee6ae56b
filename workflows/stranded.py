"""Stranded versions: what a closed Temporal run means for a version it left ``admitted``. Pure.

A version leaves ``admitted`` only when its run records an outcome. A run that fails (a
workflow bug, ``StateSchemaUnsupported`` after continue-as-new, the outcome activity out of
retries), is terminated from the UI or CLI, times out, or is cancelled by a worker that
predates the cancel patch never does — and every later delivery of that version answered
``duplicate-work``, even with force. The reconciler (``activities/run_reconciler.py``) finds
such versions and records the outcome Temporal's close status implies; this module is the
mapping, and the payloads of the ``ReconcileRuns`` workflow.

Every outcome but ``cancelled`` opens a dead letter (``NEEDS_A_PERSON``): the work did not
happen and nobody decided that it should not. A run that completed (or cannot be found)
without recording the version is an anomaly, recorded ``failed`` so a person looks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from workflows.cancellation import FROM_TEMPORAL
from workflows.contracts import RunStatus

from workflows.names import (  # noqa: F401  (re-exported)
    RECONCILE_ACTIVITY as RECONCILE_ACTIVITY, RECONCILE_WORKFLOW as RECONCILE_WORKFLOW,
)
OPEN_STATUSES = ("admitted",)
"""Versions a run owns. ``accepted`` ones belong to the outbox relay (it admits them, however
old): the reconciler never touches them. ``running`` exists only as a search attribute."""
NOT_FOUND = "NOT_FOUND"


@dataclass(frozen=True)
class ClosedRun:
    """How the run (or the last run of its continue-as-new chain) that owned a version ended."""

    status: str
    """Temporal's close status name (``FAILED``, ``TERMINATED``, ``TIMED_OUT``, ``CANCELED``,
    ``COMPLETED``) or ``NOT_FOUND``."""
    run_id: str | None
    detail: str = ""
    """The failure message, the termination reason and identity, ...: evidence for the letter."""


def outcome_for(run: ClosedRun) -> tuple[RunStatus, str]:
    """The outcome to record for a version its run left open, and the reason."""
    detail = run.detail.strip()
    if run.status == "FAILED":
        return RunStatus.FAILED, f"workflow failed: {detail or 'no failure message'}"
    if run.status == "TERMINATED":
        return RunStatus.TERMINATED, f"terminated: {detail or 'no reason given'}"
    if run.status == "TIMED_OUT":
        return RunStatus.TIMED_OUT, f"timed out: {detail or 'the run hit its execution timeout'}"
    if run.status == "CANCELED":
        return RunStatus.CANCELLED, f"cancelled by {FROM_TEMPORAL}: the run closed CANCELED without recording it"
    if run.status == NOT_FOUND:
        return RunStatus.FAILED, "run not found in Temporal (deleted, or past the namespace's retention)"
    return RunStatus.FAILED, f"the run closed {run.status} without recording this version"


@dataclass
class ReconcileRequest:
    grace_seconds: float = 60.0
    """Versions admitted more recently than this are left alone (their run is starting)."""
    limit: int = 200
    """Versions looked at per pass, oldest first; the rest wait for the next pass."""


@dataclass
class ReconcileResult:
    settled: list[str] = field(default_factory=list)
    """``<work key>@<version>: <status>`` for every version given its outcome."""
    open: int = 0
    """Versions whose run is still open (nothing to do)."""
    raced: int = 0
    """Versions whose run recorded the outcome itself while the pass looked."""
