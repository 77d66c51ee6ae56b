"""The capacity context of one admission: its request, the breakers' verdict, the ramp.

Reads breaker state through a port (the ledger in production), caching it for a second so
a burst of webhooks costs one read per second, not one per delivery.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Callable, Protocol, Sequence

from intake.capacity.breaker import BreakerPolicy, BreakerState, BreakerView, breaker_gate, ramped_limit
from intake.capacity.payload import to_payload
from intake.capacity.plan import Block, CapacityPlanner
from intake.envelope import Envelope, WorkCandidate
from intake.capacity.context import CapacityContext


class BreakerSource(Protocol):
    def states(self) -> list[BreakerState]:
        ...


class CapacityGate:
    def __init__(self, planner: CapacityPlanner, breakers: BreakerSource | None = None,
                 policy: BreakerPolicy = BreakerPolicy(), gating_providers: Sequence[str] = ("model",),
                 retry_after_seconds: float = 30.0, cache_seconds: float = 1.0,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.planner = planner
        self._breakers = breakers
        self._policy = policy
        self._providers = tuple(gating_providers)
        self._retry_after = retry_after_seconds
        self._cache_seconds = cache_seconds
        self._clock = clock
        self._cached: tuple[float, list[BreakerState]] | None = None

    def views(self) -> list[BreakerView]:
        if self._breakers is None:
            return []
        now_mono = time.monotonic()
        if self._cached is None or now_mono - self._cached[0] > self._cache_seconds:
            self._cached = (now_mono, self._breakers.states())
        now = self._clock()
        return [breaker_gate(st, now, self._policy) for st in self._cached[1] if st.provider in self._providers]

    def context(self, envelope: Envelope, candidate: WorkCandidate, resume_item: str | None = None,
                resume_receipt: str | None = None) -> CapacityContext:
        """Synchronous (it may read the ledger): run it in a thread from async code."""
        views = self.views()
        opened = [v for v in views if v.state == "open"]
        breaker = None
        if opened:
            worst = max(opened, key=lambda v: v.retry_after_seconds)
            breaker = (Block.BREAKER, worst.retry_after_seconds + 1.0,  # jittered where the defer is written
                       (f"the {worst.provider} breaker is open after repeated failures "
                        f"(last: {worst.last_error or 'unknown'})"))
        limit = ramped_limit(self.planner.global_limit(), views)
        request = self.planner.plan(candidate, envelope.source, envelope.trigger_kind, global_limit=limit)
        return CapacityContext(request, to_payload(envelope, candidate), breaker, resume_item, resume_receipt,
                               self._retry_after)
