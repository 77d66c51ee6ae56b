"""Inputs and results of the capacity activities and the maintenance workflows that call them."""

from __future__ import annotations

from dataclasses import dataclass, field

from workflows.names import (  # noqa: F401  (re-exported)
    DISPATCH_WORKFLOW as DISPATCH_WORKFLOW, REAP_WORKFLOW as REAP_WORKFLOW,
)


@dataclass
class ReleaseRequest:
    work_key: str
    generation: int


@dataclass
class DispatchRequest:
    batch: int = 200
    max_failures: int = 5
    retry_after_seconds: float = 30.0


@dataclass
class ReapRequest:
    grace_seconds: float = 120.0
    dispatch: DispatchRequest = field(default_factory=DispatchRequest)


@dataclass
class DispatchResult:
    admitted: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    dead: list[str] = field(default_factory=list)
    deferred: int = 0
    skipped: int = 0
    released: list[str] = field(default_factory=list)
    """Slot keys given back (release) or work keys reaped (reap)."""
