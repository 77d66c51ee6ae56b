"""Payloads of the maintenance workflows and their activities (outbox relay, delivery-window and
retention pruning, stale-reservation sweep).

Pure: no Temporal or database imports, so the workflows, the activities and the schedules share
them without workflows importing an activities module. One dataclass per argument; add fields
only with defaults (running schedules carry these payloads).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RelayRequest:
    grace_seconds: float = 30.0
    """Only items accepted longer ago than this (a request may still be admitting them)."""
    limit: int = 100


@dataclass
class RelayResult:
    admitted: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


@dataclass
class RetentionPolicy:
    """``maintenance.retention`` as the prune schedule carries it."""

    ages_seconds: dict[str, float | None] = field(default_factory=dict)
    """Table (or ``artifacts``) -> how old a row must be to go; absent or None: never pruned."""
    batch_size: int = 500
    max_batches: int = 100


@dataclass
class PruneRequest:
    window_hours: float
    """Delivery ids older than this are forgotten: a redelivery after it is decided afresh."""
    retention: RetentionPolicy | None = None
    """None (a schedule applied before retention existed): the worker's own ``maintenance.retention``."""


@dataclass
class RetentionReport:
    removed: dict[str, int] = field(default_factory=dict)
    """Rows (files for ``artifacts``) removed per table."""
    failed: dict[str, str] = field(default_factory=dict)
    """Tables whose prune failed this time, and why."""


@dataclass
class StaleReservationsRequest:
    grace_seconds: float = 900.0
    """Reservations held longer than this are ended (their worker died)."""


@dataclass
class StaleReservationsResult:
    from_journal: int = 0
    """Settled with the usage of an answer journaled before the crash."""
    estimated: int = 0
    """Charged at their estimate (fate unknown)."""
