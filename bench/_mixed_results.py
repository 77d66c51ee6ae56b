"""What the mixed-stream bench's phases observed: each delivery's answer, each phase's counts."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from bench._common import percentile
from intake.identity import workflow_id_for
from ledger import WorkVersion

CATEGORIES = ("accept", "reject:duplicate-delivery", "reject:duplicate-work", "reject:stale-version", "other")


@dataclass
class Answer:
    status: int | None = None
    outcome: str | None = None
    reason: str | None = None
    admitted: bool = False
    seconds: float = 0.0
    error: str | None = None

    @property
    def category(self) -> str:
        if self.error is not None:
            return "other"
        if self.outcome == "accept" and self.admitted and self.status == 202:
            return "accept"
        key = f"{self.outcome}:{self.reason}"
        return key if key in CATEGORIES and self.status == 200 else "other"

    @property
    def label(self) -> str:
        if self.error is not None:
            return f"error {self.error}"
        extra = "" if self.outcome != "accept" or self.admitted else " (not admitted)"
        return f"{self.status} {self.outcome}/{self.reason}{extra}"


@dataclass
class Phase:
    """What one phase observed."""

    name: str
    seconds_to_finish: float = 0.0
    """From the first request to every run finished."""
    model: dict[str, Any] = field(default_factory=dict)
    comments: list[dict[str, Any]] = field(default_factory=list)
    executions: set[tuple[str, str]] = field(default_factory=set)
    """(workflow id, run id) of the AgentLoop executions this phase started."""
    cpu: dict[str, float] = field(default_factory=dict)
    """CPU seconds per stack process (and this process) during the phase."""

    @property
    def calls(self) -> int:
        return int(self.model.get("calls", 0))

    @property
    def tokens(self) -> int:
        return sum(self.model.get("tokens", {}).values())


@dataclass
class IntakeResult:
    phase: Phase
    answers: list[Answer]
    send_seconds: float
    versions: list[WorkVersion] = field(default_factory=list)
    receipts: Counter = field(default_factory=Counter)
    workflow_ids: set[str] = field(default_factory=set)


@dataclass
class NaiveResult:
    phase: Phase
    starts: int = 0
    start_seconds: float = 0.0
    statuses: Counter = field(default_factory=Counter)
    steps: int = 0
    errors: list[str] = field(default_factory=list)


def latency_ms(answers: list[Answer], category: str | None, pct: float) -> float:
    vals = [a.seconds for a in answers if a.error is None and (category is None or a.category == category)]
    return percentile(vals, pct) * 1000 if vals else float("nan")


def expected_workflow_ids(versions: list[WorkVersion]) -> set[str]:
    return {workflow_id_for(v.work_key) for v in versions}
