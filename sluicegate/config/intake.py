"""``intake:`` — how many times a version may be re-admitted, how long the admission path may wait on
the authoritative source, how a delivery that could not be checked comes back, and the admission
policy (its version and its configurable rules; ``intake/policy.py``).

The freshness read has its own deadline, well inside GitHub's 10 s for answering a webhook: past
it the delivery is queued (``freshness-deadline``) and decided later, like a source that answered
an error (``source-unavailable``). A queued item is re-decided by the dispatcher after
``source_retry_seconds``, doubling on each failed re-check up to ``source_retry_max_seconds``
(plus up to 20 % jitter; the source's own ``Retry-After`` is a floor).
"""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from intake.policy import POLICY_VERSION, Policy
from intake.scope import check_glob
from sluicegate.config.section import Section


class IntakeConfig(Section):

    freshness_deadline_seconds: float = Field(default=4.0, gt=0, lt=10)
    """Deadline of the freshness read (seconds, 0 < d < 10: GitHub gives a webhook 10 s)."""
    source_retry_seconds: float = Field(default=15.0, gt=0)
    """First wait before a queued unread delivery is re-checked."""
    source_retry_max_seconds: float = Field(default=300.0, gt=0)
    """Cap of the exponential backoff between re-checks."""
    max_clock_skew_seconds: float = Field(default=300.0, gt=0, le=3600)
    """How far an event's time may be after its receipt (clock skew) before it is refused
    ``future-event``, before any forge read (0 < s <= 3600). A triage event's time is the issue's
    ``updated_at``, its version: a moment far ahead would otherwise wait for the API forever."""
    max_source_lag_seconds: float = Field(default=900.0, gt=0, le=86400)
    """How long after its receipt an event may wait for a source that does not show its version
    yet (API lag, deferred ``source-unavailable``) before it is refused ``source-lag-limit``."""
    freshness_snapshot_seconds: float = Field(default=3.0, ge=0, le=30)
    """How long a finished freshness read of a target is kept to *reject* later deliveries of it
    (never to admit; per process; 0 turns it off). See ``intake/shared_reads.py``."""
    max_readmissions_per_version: int = Field(default=3, ge=0, le=100)
    """How often one (work key, version) may be admitted again after it ended (forced re-runs,
    requeues, a failed version triggered anew); past it: ``readmission-limit``."""

    policy_version: str = Field(default=POLICY_VERSION, min_length=1, max_length=64, pattern=r"^[A-Za-z0-9._:+-]+$")
    """The admission policy's version, recorded on every receipt. Bump it whenever a policy rule
    (below, or the built-in draft rule) changes: queued work is re-decided under the new policy at
    dispatch, and admitted work not yet started re-checks it at its first step (docs/runbook.md)."""
    policy_refuse_repositories: list[str] = Field(default_factory=list)
    """``owner/repo`` globs the policy refuses (``policy:repository-refused``), e.g. ``acme/legacy-*``."""
    rerun_done_on_policy_change: bool = False
    """A version that ended ``done`` under another policy version may be admitted again by a new
    trigger (its review is posted again). Off: done stays done whatever the policy."""

    @field_validator("policy_refuse_repositories")
    @classmethod
    def _usable_globs(cls, globs: list[str]) -> list[str]:
        return [check_glob(g) for g in globs]

    def policy(self) -> Policy:
        return Policy(self.policy_version, tuple(self.policy_refuse_repositories), self.rerun_done_on_policy_change)

    @model_validator(mode="after")
    def _ordered(self) -> "IntakeConfig":
        if self.source_retry_max_seconds < self.source_retry_seconds:
            raise ValueError("intake.source_retry_max_seconds must be at least intake.source_retry_seconds")
        return self
