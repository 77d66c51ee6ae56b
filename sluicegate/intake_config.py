"""``intake:`` — how many times a version may be re-admitted, how long the admission path may wait on the authoritative source, and how a
delivery that could not be checked comes back.

The freshness read has its own deadline, well inside GitHub's 10 s for answering a webhook: past
it the delivery is queued (``freshness-deadline``) and decided later, like a source that answered
an error (``source-unavailable``). A queued item is re-decided by the dispatcher after
``source_retry_seconds``, doubling on each failed re-check up to ``source_retry_max_seconds``
(plus up to 20 % jitter; the source's own ``Retry-After`` is a floor).
"""

from __future__ import annotations

from pydantic import Field, model_validator

from sluicegate.config_section import Section


class IntakeConfig(Section):

    freshness_deadline_seconds: float = Field(default=4.0, gt=0, lt=10)
    """Deadline of the freshness read (seconds, 0 < d < 10: GitHub gives a webhook 10 s)."""
    source_retry_seconds: float = Field(default=15.0, gt=0)
    """First wait before a queued unread delivery is re-checked."""
    source_retry_max_seconds: float = Field(default=300.0, gt=0)
    """Cap of the exponential backoff between re-checks."""
    max_readmissions_per_version: int = Field(default=3, ge=0, le=100)
    """How often one (work key, version) may be admitted again after it ended (forced re-runs,
    requeues, a failed version triggered anew); past it: ``readmission-limit``."""

    @model_validator(mode="after")
    def _ordered(self) -> "IntakeConfig":
        if self.source_retry_max_seconds < self.source_retry_seconds:
            raise ValueError("intake.source_retry_max_seconds must be at least intake.source_retry_seconds")
        return self
