"""``fair_order``: effective (aged) level first, round robin between tenants, oldest first within a
tenant. The aging properties (no starvation, higher priority wins at equal age) are in
``test_fairness_aging.py``; this file checks the order's shape at any ``now`` and ``aging_seconds``."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from intake.capacity import QueuedItem, fair_order
from intake.capacity.fairness import effective_level

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@st.composite
def queues(draw) -> tuple[list[QueuedItem], dict[str, int], dict]:
    """Up to 60 items over up to 6 tenants; enqueued_at drawn from a small range so ties occur;
    the order's ``now`` and ``aging_seconds`` (``None``: strict priority)."""
    tenants = draw(st.lists(st.sampled_from("abcdef"), min_size=1, max_size=6, unique=True))
    rows = draw(st.lists(st.tuples(st.sampled_from(tenants), st.integers(1, 5), st.integers(0, 30)), max_size=60))
    items = [QueuedItem(f"i{n:03d}", t, p, T0 + timedelta(seconds=s)) for n, (t, p, s) in enumerate(rows)]
    active = draw(st.dictionaries(st.sampled_from(tenants), st.integers(0, 5)))
    aging = draw(st.one_of(st.none(), st.sampled_from([1.0, 7.0, 30.0, 120.0])))
    at = {"now": T0 + timedelta(seconds=draw(st.integers(30, 400))), "aging_seconds": aging}
    return items, active, at


@given(queues())
def test_output_is_a_permutation_of_the_input(q):
    items, active, at = q
    assert sorted(fair_order(items, active, **at), key=lambda i: i.id) == sorted(items, key=lambda i: i.id)


@given(queues())
def test_within_a_tenant_and_level_oldest_goes_first(q):
    items, active, at = q
    seen: dict[tuple[str, int], list[QueuedItem]] = defaultdict(list)
    for item in fair_order(items, active, **at):
        seen[item.tenant, effective_level(item, **at)].append(item)
    for run in seen.values():
        assert [(i.enqueued_at, i.id) for i in run] == sorted((i.enqueued_at, i.id) for i in run)


@given(queues())
def test_effective_levels_never_interleave(q):
    items, active, at = q
    levels = [effective_level(i, **at) for i in fair_order(items, active, **at)]
    assert levels == sorted(levels)


@given(queues())
def test_a_tenants_kth_item_is_within_k_plus_one_rounds(q):
    # Round robin: each tenant's k-th item (0-based) is served in turn k, and a turn is at most
    # one item per tenant of that level, so it lands before position (k + 1) * tenants of the level.
    items, active, at = q
    order = fair_order(items, active, **at)
    start = 0
    for level in sorted({effective_level(i, **at) for i in order}):
        segment = [i for i in order if effective_level(i, **at) == level]
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
