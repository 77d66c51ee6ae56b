"""Aging in ``fair_order``: no starvation under a steady higher-priority flood; the higher priority
still wins at equal age; the documented bound on who may overtake an item (``intake/capacity/fairness.py``).

The flood is simulated in whole ticks of one second: each tick ``k`` flood items (priority ``q``,
tenant ``flood``) arrive, then the first ``k`` of ``fair_order`` are admitted, so the service
rate equals the arrival rate and the flood never ends. Under strict priority the lone item of
priority ``p > q`` is never admitted (checked too, so the no-starvation property can fail).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from intake.capacity import QueuedItem, fair_order
from intake.capacity.fairness import effective_level

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _at(tick: int) -> datetime:
    return T0 + timedelta(seconds=tick)


def _flood(p: int, q: int, k: int, backlog: int, aging: float | None, ticks: int) -> int | None:
    """The tick at which the lone priority-``p`` item (enqueued at tick 0) is admitted, or None."""
    queue = [QueuedItem(f"b{n:03d}", "flood", q, _at(-backlog + n)) for n in range(backlog)]
    queue.append(QueuedItem("low", "low", p, _at(0)))
    for tick in range(ticks):
        queue += [QueuedItem(f"f{tick:04d}-{n}", "flood", q, _at(tick)) for n in range(k)]
        order = fair_order(queue, {}, now=_at(tick), aging_seconds=aging)
        admitted = {i.id for i in order[:k]}
        if "low" in admitted:
            return tick
        queue = [i for i in queue if i.id not in admitted]
    return None


@given(p=st.integers(2, 5), gap=st.integers(1, 4), k=st.integers(1, 3), backlog=st.integers(0, 12),
       aging=st.integers(1, 6))
def test_no_starvation_under_a_steady_higher_priority_flood(p, gap, k, backlog, aging):
    q = max(1, p - gap)
    bound = (p - q) * aging + math.ceil(backlog / k) + 1
    waited = _flood(p, q, k, backlog, float(aging), ticks=bound + 5)
    assert waited is not None and waited <= bound, (waited, bound)


@given(p=st.integers(2, 5), k=st.integers(1, 3), backlog=st.integers(0, 12))
def test_strict_priority_starves_the_same_item(p, k, backlog):
    # The contrast that makes the property above meaningful: without aging the flood wins forever.
    assert _flood(p, 1, k, backlog, None, ticks=60) is None


@st.composite
def queue_at(draw):
    tenants = draw(st.lists(st.sampled_from("abcd"), min_size=1, max_size=4, unique=True))
    rows = draw(st.lists(st.tuples(st.sampled_from(tenants), st.integers(1, 5), st.integers(0, 600)),
                         min_size=2, max_size=40))
    items = [QueuedItem(f"i{n:03d}", t, p, _at(s)) for n, (t, p, s) in enumerate(rows)]
    active = draw(st.dictionaries(st.sampled_from(tenants), st.integers(0, 5)))
    return items, active, _at(draw(st.integers(600, 2000))), float(draw(st.sampled_from([1, 5, 60, 120, 300])))


@given(queue_at())
def test_the_higher_priority_wins_at_equal_age(q):
    items, active, now, aging = q
    position = {item.id: n for n, item in enumerate(fair_order(items, active, now=now, aging_seconds=aging))}
    for a in items:
        for b in items:
            if a.enqueued_at == b.enqueued_at and a.priority < b.priority:
                assert position[a.id] < position[b.id], (a, b)


@given(queue_at())
def test_later_work_overtakes_only_through_one_turn_at_an_equal_level(q):
    # Documented bound: b (priority q) enqueued at or after a.enqueued_at + (p - q) * aging is never at a
    # better level than a (priority p); when b is ordered first anyway they share a level and a tenant-turn.
    items, active, now, aging = q
    order = fair_order(items, active, now=now, aging_seconds=aging)
    position = {item.id: n for n, item in enumerate(order)}
    for a in items:
        for b in items:
            if b.enqueued_at >= a.enqueued_at + timedelta(seconds=(a.priority - b.priority) * aging):
                assert effective_level(b, now, aging) >= effective_level(a, now, aging), (a, b)
                if position[b.id] < position[a.id]:
                    assert effective_level(b, now, aging) == effective_level(a, now, aging)
                    # same tenant: oldest first, so only older (or equally old) work goes ahead of a
                    assert b.tenant != a.tenant or b.enqueued_at <= a.enqueued_at, (a, b)
