"""``capacity:`` — limits before the model: active runs, quotas, rates, priority, breakers.

Limits set to ``null`` are unlimited. See docs/capacity.md for what each one does to a
delivery (``defer`` with a reason and a retry-after; the item waits in the deferred queue).
"""

from __future__ import annotations

from pydantic import Field

from intake.capacity import BreakerPolicy, CapacityLimits, TenantLimits
from intake.capacity.fairness import DEFAULT_AGING_SECONDS
from sluicegate.config.section import Section as _Section




class TenantCapacity(_Section):
    max_active_runs: int | None = Field(default=None, ge=1)
    admissions_per_day: int | None = Field(default=None, ge=1)
    rate_per_second: float | None = Field(default=None, gt=0)
    """Token bucket per (tenant, source): sustained admissions per second..."""
    burst: float = Field(default=10.0, ge=1)
    """...and how many may come at once."""


class BreakerConfig(_Section):
    failure_threshold: int = Field(default=5, ge=1)
    window_seconds: float = Field(default=30.0, gt=0)
    open_seconds: float = Field(default=30.0, gt=0)
    ramp_seconds: float = Field(default=120.0, ge=0)
    gating_providers: list[str] = Field(default_factory=lambda: ["model"])
    """Providers whose open breaker defers intake (``model``, ``forge``)."""


class CapacityConfig(_Section):
    global_active_runs: int | None = Field(default=None, ge=1)
    tenant_defaults: TenantCapacity = Field(default_factory=TenantCapacity)
    tenants: dict[str, TenantCapacity] = Field(default_factory=dict)
    concurrency_key: str | None = "repo:{owner}/{repo}"
    """The resource in conflict; placeholders {owner} {repo} {number} {tenant} {work_key}."""
    concurrency_limit: int | None = Field(default=None, ge=1)
    priority_by_trigger: dict[str, int] = Field(
        default_factory=lambda: {"manual": 2, "event": 3, "goal": 3, "schedule": 4})
    """1 (first) .. 5 (last); also Temporal's priority key for the run."""
    aging_seconds: float | None = Field(default=DEFAULT_AGING_SECONDS, gt=0)
    """Each this many seconds in the deferred queue raise an item one priority level, so priority
    ``p`` is never overtaken by work arriving more than ``(p - 1) * aging_seconds`` after it
    (``intake/capacity/fairness.py``). ``null``: strict priority (a steady flood starves lower levels)."""
    breaker: BreakerConfig = Field(default_factory=BreakerConfig)
    defer_retry_seconds: float = Field(default=30.0, gt=0)
    dispatch_interval_seconds: float = Field(default=15.0, ge=1)
    dispatch_batch: int = Field(default=200, ge=1)
    max_dispatch_failures: int = Field(default=5, ge=1)
    reap_interval_seconds: float = Field(default=60.0, ge=1)
    reap_grace_seconds: float = Field(default=120.0, ge=0)
    """A hold younger than this is never reaped (its run may still be starting)."""

    def limits(self, sources: dict) -> CapacityLimits:
        def tenant(t: TenantCapacity) -> TenantLimits:
            return TenantLimits(t.max_active_runs, t.admissions_per_day, t.rate_per_second, t.burst)

        source_keys = {name: (src.concurrency_key or self.concurrency_key, src.concurrency_limit)
                       for name, src in sources.items() if src.concurrency_limit is not None}
        priorities = {name: src.priority for name, src in sources.items() if src.priority is not None}
        return CapacityLimits(self.global_active_runs, tenant(self.tenant_defaults),
                              {name: tenant(t) for name, t in self.tenants.items()}, self.concurrency_key,
                              self.concurrency_limit, source_keys, dict(self.priority_by_trigger), priorities)

    def breaker_policy(self) -> BreakerPolicy:
        b = self.breaker
        return BreakerPolicy(b.failure_threshold, b.window_seconds, b.open_seconds, b.ramp_seconds)
