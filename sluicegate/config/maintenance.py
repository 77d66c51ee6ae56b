"""``maintenance:`` — the ledger's own schedules: the outbox relay and pruning, with retention per table.

Every age in ``retention`` is a duration (``90d``, ``36h``); ``null`` keeps that table forever.
Rows still load-bearing are never pruned whatever their age (``ledger/_retention.py`` lists
what keeps each table's rows); the defaults keep receipts, the audit trail of every decision,
for 90 days. Ages below an hour are refused: a typo must not empty a table.
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import Field, field_validator

from sluicegate.config.section import Section as _Section
from sluicegate.config.durations import Duration

MIN_RETENTION = timedelta(hours=1)
RETAINED_TABLES = ("receipts", "side_effects", "credentials", "budget_reservations", "budget_days",
                   "admission_counts", "deferred_items", "capacity_counters", "dead_letters", "model_journal",
                   "cancel_requests", "artifacts", "kept_deliveries")




class RetentionConfig(_Section):
    """How long each growing table keeps rows that are no longer load-bearing."""

    receipts: Duration | None = timedelta(days=90)
    side_effects: Duration | None = timedelta(days=90)
    """Finished ones (done, failed, fenced), counted from their last update."""
    credentials: Duration | None = timedelta(days=1)
    """Counted from expiry."""
    budget_reservations: Duration | None = timedelta(days=30)
    """Settled or released ones."""
    budget_days: Duration | None = timedelta(days=400)
    """Per-day spend rows (tenant and global): a year of cost history."""
    admission_counts: Duration | None = timedelta(days=30)
    deferred_items: Duration | None = timedelta(days=30)
    """Items that left the queue (admitted, dropped, superseded, dead)."""
    capacity_counters: Duration | None = timedelta(days=7)
    """Idle slot counters: none active, no hold, not raised or lowered for this long."""
    dead_letters: Duration | None = timedelta(days=30)
    """Resolved or retried ones; open letters stay."""
    model_journal: Duration | None = timedelta(hours=72)
    """Journaled model answers, once their reservation ended and their version is no longer running
    (only a retry of a step still running, or a re-run of the same generation, reads them)."""
    cancel_requests: Duration | None = timedelta(days=90)
    """Operator cancel requests (``starter.py cancel``), once no version of their work key is running:
    the audit of who cancelled what stays in the version's recorded outcome."""
    artifacts: Duration | None = timedelta(days=30)
    """Files under ``artifacts.dir`` not written for this long."""
    kept_deliveries: Duration | None = timedelta(days=7)
    """Raw bodies kept after ``unsupported-schema`` for replay (``kept_deliveries``), from when kept."""
    batch_size: int = Field(default=500, ge=1, le=10_000)
    """Rows deleted per transaction (on SQLite the write lock is held for one batch)."""
    max_batches: int = Field(default=100, ge=1)
    """Batches per table per run; the rest waits for the next run."""

    @field_validator(*RETAINED_TABLES)
    @classmethod
    def _not_tiny(cls, value: timedelta | None) -> timedelta | None:
        if value is not None and value < MIN_RETENTION:
            raise ValueError("must be at least 1h (null keeps the table forever)")
        return value

    def ages_seconds(self) -> dict[str, float | None]:
        """Table -> age in seconds (None: never pruned), as the prune workflow carries it."""
        return {name: (getattr(self, name).total_seconds() if getattr(self, name) is not None else None)
                for name in RETAINED_TABLES}


class MaintenanceConfig(_Section):
    """The ledger's own schedules (applied with the scan schedules by ``starter.py schedule apply``)."""

    outbox_relay_interval: Duration = timedelta(minutes=1)
    outbox_grace_seconds: float = Field(default=30.0, ge=0)
    """An accepted item younger than this may still be admitting; the relay leaves it alone."""
    delivery_dedupe_window_hours: float = Field(default=168.0, gt=0)
    """How long a delivery id is remembered; a redelivery after this is decided afresh."""
    prune_interval: Duration = timedelta(hours=1)
    reconcile_interval: Duration = timedelta(minutes=2)
    """How often versions whose run closed without an outcome are given their real one."""
    reconcile_grace_seconds: float = Field(default=60.0, ge=0)
    """Versions admitted more recently than this are left alone by the reconciler."""
    retention: RetentionConfig = Field(default_factory=RetentionConfig)
