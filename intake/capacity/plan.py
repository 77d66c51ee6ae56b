"""What one admission needs: slots (global, tenant, concurrency key), a day quota, a rate token.

A run holds one slot in each of its counters from admission until it ends. The
concurrency key follows the resource in conflict — ``repo:{owner}/{repo}`` by default,
set per source — so two pull requests of one repository can be limited to one run at a
time while other repositories proceed. Limits of ``None`` mean unlimited.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from enum import StrEnum

from intake.envelope import TriggerKind, WorkCandidate
from sluicegate.forge.retry_after import JITTER_FRACTION, with_jitter

GLOBAL_SLOT = "global"


class Block(StrEnum):
    """Which limit deferred the work (the receipt's reason detail and the queue's ``blocked_on`` kind)."""

    GLOBAL = "global-active-runs"
    TENANT = "tenant-active-runs"
    KEY = "concurrency-key"
    QUOTA = "tenant-day-quota"
    RATE = "rate-limit"
    BREAKER = "breaker-open"
    SOURCE = "source-unavailable"
    """The authoritative source could not be read when the item was re-checked."""

    @property
    def affects_everyone(self) -> bool:
        """A global block: queued work of every tenant waits on it, so new work queues behind it."""
        return self in (Block.GLOBAL, Block.BREAKER)


@dataclass(frozen=True)
class SlotClaim:
    key: str
    """Counter key: ``global``, ``tenant:<t>`` or ``key:<concurrency key>``."""
    limit: int
    block: Block


@dataclass(frozen=True)
class RateLimit:
    bucket: str
    per_second: float
    burst: float


@dataclass(frozen=True)
class CapacityRequest:
    tenant: str
    priority: int
    """1 (first) .. 5 (last), Temporal's priority-key convention."""
    slots: tuple[SlotClaim, ...] = ()
    day_quota: int | None = None
    rate: RateLimit | None = None
    concurrency_key: str | None = None


@dataclass(frozen=True)
class TenantLimits:
    max_active_runs: int | None = None
    admissions_per_day: int | None = None
    rate_per_second: float | None = None
    burst: float = 10.0


@dataclass(frozen=True)
class CapacityLimits:
    global_active_runs: int | None = None
    tenant_defaults: TenantLimits = TenantLimits()
    tenants: dict[str, TenantLimits] = field(default_factory=dict)
    concurrency_key: str | None = "repo:{owner}/{repo}"
    concurrency_limit: int | None = None
    source_keys: dict[str, tuple[str | None, int | None]] = field(default_factory=dict)
    """Per source name: (key template, limit) overriding the default."""
    priority_by_trigger: dict[str, int] = field(default_factory=dict)
    source_priority: dict[str, int] = field(default_factory=dict)


def concurrency_key(template: str, candidate: WorkCandidate) -> str:
    """Fill ``{owner}``, ``{repo}``, ``{number}``, ``{tenant}``, ``{work_key}`` from the candidate.

    Lower-cased, like the work key: GitHub owner and repository names are case-insensitive, so
    ``Acme/API`` and ``acme/api`` must share one hold, not get a slot each."""
    t = candidate.target
    return template.format(owner=t.owner.lower(), repo=t.repo.lower(), number=t.number, tenant=candidate.tenant,
                           work_key=candidate.work_key).lower()


class CapacityPlanner:
    """Turns a candidate into the :class:`CapacityRequest` its admission must satisfy."""

    def __init__(self, limits: CapacityLimits) -> None:
        self._limits = limits

    @classmethod
    def unlimited(cls) -> "CapacityPlanner":
        return cls(CapacityLimits(concurrency_key=None))

    def tenant_limits(self, tenant: str) -> TenantLimits:
        return self._limits.tenants.get(tenant, self._limits.tenant_defaults)

    def global_limit(self) -> int | None:
        return self._limits.global_active_runs

    def key_limit(self, source: str) -> int | None:
        """The concurrency-key limit for work from ``source``."""
        return self._limits.source_keys.get(source, (None, self._limits.concurrency_limit))[1]

    def priority(self, source: str, trigger: TriggerKind) -> int:
        value = self._limits.source_priority.get(source, self._limits.priority_by_trigger.get(str(trigger), 3))
        return min(5, max(1, value))

    def key_for(self, candidate: WorkCandidate, source: str) -> str | None:
        """The concurrency key ``candidate`` from ``source`` would hold (None when none is configured)."""
        template = self._limits.source_keys.get(source, (self._limits.concurrency_key, None))[0]
        return concurrency_key(template, candidate) if template else None

    def plan(self, candidate: WorkCandidate, source: str, trigger: TriggerKind,
             global_limit: int | None = None) -> CapacityRequest:
        """``global_limit`` overrides the configured one (the breaker's ramp lowers it)."""
        lim = self._limits
        tenant = self.tenant_limits(candidate.tenant)
        slots: list[SlotClaim] = []
        cap = global_limit if global_limit is not None else lim.global_active_runs
        if cap is not None:
            slots.append(SlotClaim(GLOBAL_SLOT, cap, Block.GLOBAL))
        if tenant.max_active_runs is not None:
            slots.append(SlotClaim(f"tenant:{candidate.tenant}", tenant.max_active_runs, Block.TENANT))
        key, limit = self.key_for(candidate, source), self.key_limit(source)
        if key is not None and limit is not None:
            slots.append(SlotClaim(f"key:{key}", limit, Block.KEY))
        rate = None
        if tenant.rate_per_second is not None:
            rate = RateLimit(f"rate:{candidate.tenant}:{source}", tenant.rate_per_second, max(1.0, tenant.burst))
        return CapacityRequest(candidate.tenant, self.priority(source, trigger), tuple(slots),
                               tenant.admissions_per_day, rate, key)


def take_token(tokens: float, elapsed_seconds: float, rate: RateLimit) -> tuple[bool, float, float]:
    """Token bucket: refill for ``elapsed_seconds``, try to take one.

    Returns (taken, tokens left, seconds until a token is available when not taken)."""
    level = min(rate.burst, tokens + max(0.0, elapsed_seconds) * rate.per_second)
    if level >= 1.0:
        return True, level - 1.0, 0.0
    return False, level, (1.0 - level) / rate.per_second


def jittered(seconds: float, fraction: float = JITTER_FRACTION, rng: random.Random | None = None) -> float:
    """``seconds`` stretched by up to ``fraction`` at random (``sluicegate.forge.retry_after.with_jitter``,
    uncapped), so deferred work does not return in step; rounded up to a tenth of a second."""
    return math.ceil(with_jitter(seconds, rng, cap=math.inf, fraction=fraction) * 10) / 10
