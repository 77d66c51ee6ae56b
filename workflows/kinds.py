"""Kinds shared by both sides of the wire: how a run ended, and how an activity failed.

``RunStatus`` values are written to ``work_versions.status`` and carried in ``RunOutcome``;
``FailureType`` values are ``ApplicationError.type`` strings that activities raise and workflows
(and retry policies) match. Both are ``StrEnum``: a member *is* its string, so histories, the
ledger and the wire see exactly the values they saw before. NEVER change a value; add members.
Pure: no imports beyond the standard library.
"""

from __future__ import annotations

from enum import StrEnum


class RunStatus(StrEnum):
    """How a work order ended (``work_versions.status`` once the version left ``admitted``)."""

    DONE = "done"
    FAILED = "failed"
    BUDGET_EXHAUSTED = "budget_exhausted"
    SUPERSEDED = "superseded"
    KILLED = "killed"
    CANCELLED = "cancelled"
    """A person cancelled the run (Temporal UI/CLI or ``starter.py cancel``): no dead letter."""
    TERMINATED = "terminated"
    """The workflow was terminated; recorded by the reconciler, with a dead letter."""
    TIMED_OUT = "timed_out"
    """The workflow hit its execution or run timeout; recorded by the reconciler, with a dead letter."""


NEEDS_A_PERSON = frozenset({RunStatus.FAILED, RunStatus.TERMINATED, RunStatus.TIMED_OUT})
"""Outcomes that open a dead letter: someone must look at them."""


class FailureType(StrEnum):
    """``ApplicationError.type`` values raised by activities and workflows and matched by workflows.

    Families built from a prefix (``Model``/``Forge``/``Tool`` + ``RateLimited``/``Unavailable``/
    ``RequestRejected``) are listed member by member so a match is never a bare string."""

    KILLED = "Killed"
    DAY_BUDGET_EXCEEDED = "DayBudgetExceeded"
    CREDENTIAL_EXPIRED = "CredentialExpired"
    FENCED_OUT = "FencedOut"
    LEASE_LOST = "LeaseLost"
    SIDE_EFFECT_FAILED = "SideEffectFailed"
    TOOL_REQUEST_REJECTED = "ToolRequestRejected"
    TOOL_RATE_LIMITED = "ToolRateLimited"
    TOOL_UNAVAILABLE = "ToolUnavailable"
    MODEL_REQUEST_REJECTED = "ModelRequestRejected"
    MODEL_RATE_LIMITED = "ModelRateLimited"
    MODEL_UNAVAILABLE = "ModelUnavailable"
    MODEL_KEY_UNAVAILABLE = "ModelKeyUnavailable"
    FORGE_REQUEST_REJECTED = "ForgeRequestRejected"
    FORGE_RATE_LIMITED = "ForgeRateLimited"
    FORGE_UNAVAILABLE = "ForgeUnavailable"
    STATE_SCHEMA_UNSUPPORTED = "StateSchemaUnsupported"
    SCAN_INCOMPLETE = "ScanIncomplete"
    INVALID_GOAL = "InvalidGoal"
    RETENTION_FAILED = "RetentionFailed"

    @classmethod
    def of(cls, prefix: str, kind: str) -> "FailureType":
        """The member for ``prefix`` (``Model``/``Forge``/``Tool``) + ``kind`` (``RateLimited``,
        ``Unavailable``, ``RequestRejected``); ValueError for a pair that is not a member."""
        return cls(f"{prefix}{kind}")


NON_RETRYABLE_MODEL_ERRORS = [FailureType.MODEL_REQUEST_REJECTED, FailureType.DAY_BUDGET_EXCEEDED, FailureType.KILLED]
"""The model activity's retry policy stops on these (order kept: it is part of recorded commands)."""
