"""``fair_order``: priority first, round robin between tenants, oldest first within a tenant."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from intake.capacity import QueuedItem, fair_order

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@st.composite
def queues(draw) -> tuple[list[QueuedItem], dict[str, int]]:
    """Up to 60 items over up to 6 tenants; enqueued_at drawn from a small range so ties occur."""
    tenants = draw(st.lists(st.sampled_from("abcdef"), min_size=1, max_size=6, unique=True))
    rows = draw(st.lists(st.tuples(st.sampled_from(tenants), st.integers(1, 5), st.integers(0, 30)), max_size=60))
    items = [QueuedItem(f"i{n:03d}", t, p, T0 + timedelta(seconds=s)) for n, (t, p, s) in enumerate(rows)]
    active = draw(st.dictionaries(st.sampled_from(tenants), st.integers(0, 5)))
    return items, active


@given(queues())
def test_output_is_a_permutation_of_the_input(q):
    items, active = q
    assert sorted(fair_order(items, active), key=lambda i: i.id) == sorted(items, key=lambda i: i.id)


@given(queues())
def test_within_a_tenant_and_priority_oldest_goes_first(q):
    items, active = q
    seen: dict[tuple[str, int], list[QueuedItem]] = defaultdict(list)
    for item in fair_order(items, active):
        seen[item.tenant, item.priority].append(item)
    for run in seen.values():
        assert [(i.enqueued_at, i.id) for i in run] == sorted((i.enqueued_at, i.id) for i in run)


@given(queues())
def test_priority_levels_never_interleave(q):
    items, active = q
    levels = [i.priority for i in fair_order(items, active)]
    assert levels == sorted(levels)


@given(queues())
def test_a_tenants_kth_item_is_within_k_plus_one_rounds(q):
    # Round robin: each tenant's k-th item (0-based) is served in turn k, and a turn is at most
    # one item per tenant of that level, so it lands before position (k + 1) * tenants of the level.
    items, active = q
    order = fair_order(items, active)
    start = 0
    for level in sorted({i.priority for i in order}):
        segment = [i for i in order if i.priority == level]
        assert order[start:start + len(segment)] == segment  # contiguous (levels never interleave)
        tenants = len({i.tenant for i in segment})
        kth: dict[str, int] = defaultdict(int)
        for position, item in enumerate(segment):
            k = kth[item.tenant]
            assert position < k * tenants + tenants, (level, item, position, k, tenants)
            kth[item.tenant] += 1
        start += len(segment)


def test_the_tenant_with_fewest_active_runs_takes_the_first_turn():
    flood = [QueuedItem(f"f{n}", "flood", 3, T0 + timedelta(seconds=n)) for n in range(5)]
    steady = [QueuedItem("s0", "steady", 3, T0 + timedelta(minutes=5))]
    assert [i.id for i in fair_order(flood + steady, {"flood": 3})] == ["s0", "f0", "f1", "f2", "f3", "f4"]
    # On a tie in active runs, the tenant whose oldest item waited longest goes first.
    assert [i.id for i in fair_order(flood + steady, {})][:3] == ["f0", "s0", "f1"]
