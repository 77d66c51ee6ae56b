"""Payloads of the goal trigger family (``Goal`` workflow and its activities).

Pure: no Temporal or database imports. One dataclass per workflow/activity argument; add fields
only with defaults (running goals carry these payloads). Names live in ``workflows/names.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from intake.decision import IntakeDecision

GOAL_SOURCE = "goal"

GOAL_CONDITIONS = ("head", "comment", "ready")


@dataclass
class GoalCondition:
    """What must be observed on the pull request (see docs/schedules.md#goals).

    * ``head`` — open and its head sha equals ``value`` (e.g. wait for a fix-up push);
    * ``comment`` — open and a comment not written by Sluicegate contains ``value``;
    * ``ready`` — open and neither a draft nor titled ``WIP``/``[WIP]``/``Draft:``.
    """

    kind: str
    value: str | None = None

    def describe(self) -> str:
        return f"{self.kind}:{self.value}" if self.value is not None else self.kind


@dataclass
class GoalRequest:
    tenant: str
    owner: str
    repo: str
    number: int
    condition: GoalCondition
    poll_seconds: float
    max_polls: int
    deadline_seconds: float
    """Measured from the workflow's start with ``workflow.now()``."""
    source: str = GOAL_SOURCE
    activity_timeout_seconds: float = 30
    observe_max_attempts: int = 3

    @property
    def target_id(self) -> str:
        return f"{self.owner}/{self.repo}#{self.number}"


@dataclass
class ObserveRequest:
    owner: str
    repo: str
    number: int
    condition: GoalCondition
    tenant: str = ""
    """For the kill switch: a goal whose work key or tenant is killed ends when it wakes."""


@dataclass
class Observation:
    exists: bool
    open: bool = False
    head_sha: str | None = None
    draft: bool = False
    holds: bool = False
    detail: str = ""
    killed: bool = False


@dataclass
class GoalResult:
    target_id: str
    condition: str
    met: bool
    polls: int
    bound: str | None = None
    """``max-polls`` | ``deadline`` when the bound ended the watch."""
    decision: IntakeDecision | None = None
    receipt_id: str | None = None
    last_observation: str = ""
