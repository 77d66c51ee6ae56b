"""RoomCheck: the dispatcher skips items bound to be refused, without a forge read (pure)."""

from __future__ import annotations

from dataclasses import dataclass

from intake.capacity import Block, CapacityLimits, CapacityPlanner, TenantLimits
from intake.capacity.dispatch import RoomCheck


@dataclass
class Item:
    tenant: str
    blocked_key: str | None = None
    source: str = "github"


PLANNER = CapacityPlanner(CapacityLimits(global_active_runs=3, tenant_defaults=TenantLimits(max_active_runs=2),
                                         concurrency_limit=1, source_keys={"events": ("repo:{owner}/{repo}", 2)}))


def test_full_counters_are_reported_by_the_narrowest_block_and_admissions_count():
    room = RoomCheck({"global": 1, "tenant:a": 2, "key:repo:b/x": 1}, PLANNER)
    assert room.full(Item("a")) == Block.TENANT
    assert room.full(Item("b", "key:repo:b/x")) == Block.KEY
    assert room.full(Item("b", "key:repo:b/x", source="events")) is None  # that source allows 2 per key
    assert room.full(Item("c")) is None
    room.admitted(Item("c"))
    room.admitted(Item("d"))
    assert room.full(Item("e")) == Block.GLOBAL  # 1 + 2 admitted this pass = the global limit


def test_unlimited_planner_never_reports_full():
    room = RoomCheck({"global": 10_000, "tenant:a": 10_000}, CapacityPlanner.unlimited())
    assert room.full(Item("a", "key:repo:a/x")) is None
