"""Capacity before the model: what a run needs (slots, quota, rate), breakers, fair dispatch.

Pure logic, no Temporal and no database: the ledger applies a :class:`CapacityRequest`
atomically inside the decide transaction; the dispatcher orders the deferred queue with
:func:`fair_order`; breakers decide admission from their recorded state.
"""

from intake.capacity.breaker import (
    BreakerPolicy, BreakerState, BreakerView, breaker_gate, ramped_limit, record_failure,
)
from intake.capacity.fairness import QueuedItem, fair_order
from intake.capacity.plan import (
    Block, CapacityLimits, CapacityPlanner, CapacityRequest, RateLimit, SlotClaim, TenantLimits,
    concurrency_key, jittered, take_token,
)

__all__ = [
    "Block", "BreakerPolicy", "BreakerState", "BreakerView", "CapacityLimits", "CapacityPlanner", "CapacityRequest",
    "QueuedItem", "RateLimit", "SlotClaim", "TenantLimits", "breaker_gate", "concurrency_key", "fair_order",
    "jittered", "ramped_limit", "record_failure", "take_token",
]
